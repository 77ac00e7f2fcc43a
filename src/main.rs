// Everything, the runtime included, is in the library (`app::main` says why).
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(karpdoctor::app::main())
}

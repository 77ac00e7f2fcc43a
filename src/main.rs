use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    // One line instead of a backtrace: checks run in their own tasks and report their own
    // panics as an internal-error outcome; this hook only keeps stderr readable.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("karpdoctor: internal error: {info} (please report this)");
    }));
    let cli = karpdoctor::cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Checks await facts through a few layers of async helpers, each holding the AWS SDK
        // call's state; unoptimised builds lay those out on the task's stack. Tokio's 2 MiB
        // default is too tight there, and the few worker threads make room cheap.
        .thread_stack_size(16 << 20)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("karpdoctor: cannot start the async runtime: {e}");
            return ExitCode::from(karpdoctor::report::EXIT_TROUBLE);
        }
    };
    let code = runtime.block_on(karpdoctor::app::run(cli));
    // A request stuck on a stalled endpoint must not keep the process alive past --timeout.
    runtime.shutdown_timeout(Duration::from_millis(200));
    ExitCode::from(code)
}

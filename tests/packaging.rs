//! Installing karpdoctor like the rest of the kit: shell completions and manual pages generated
//! from the CLI definition, the binary as a kubectl plugin, and the krew manifest template.
//! Every list of commands here comes from the clap definition, so a new command is covered
//! without touching this file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use clap::CommandFactory;
use serde::Deserialize;

use support::{Scratch, karpdoctor, scratch, verdicts};

fn run(args: &[&str]) -> Output {
    karpdoctor(args, &[])
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The commands of the definition (clap adds `help` only when it builds the command).
fn commands() -> Vec<String> {
    let names: Vec<String> = karpdoctor::cli::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(names.len() >= 9, "{names:?}");
    names
}

/// `program` on PATH, for the tests that use a tool only when the machine has it.
fn installed(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs `program args` with `input` on stdin.
fn pipe(program: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn completion_script(shell: &str) -> String {
    let o = run(&["completions", shell]);
    assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
    assert!(o.stderr.is_empty(), "{shell}: {}", stderr(&o));
    let script = stdout(&o);
    assert!(script.len() > 1000, "{shell}: {script}");
    script
}

/// The piece of a completion script that offers one command.
type Offer = fn(&str) -> String;

#[test]
fn every_shell_s_script_offers_every_command() {
    // How each shell's script offers a command word: an exact piece of the generated code,
    // so a command merely mentioned in another command's description does not count.
    let offers: [(&str, Offer); 5] = [
        ("bash", |c| format!("karpdoctor,{c})")),
        ("zsh", |c| format!("\n'{c}:")),
        ("fish", |c| {
            format!("-n \"__fish_karpdoctor_needs_command\" -f -a \"{c}\"")
        }),
        ("powershell", |c| format!("[CompletionResult]::new('{c}', ")),
        ("elvish", |c| format!("cand {c} '")),
    ];
    for (shell, offer) in offers {
        let script = completion_script(shell);
        for command in commands() {
            let needle = offer(&command);
            assert!(
                script.contains(&needle),
                "{shell}: the script does not offer `{command}` (no {needle:?})"
            );
        }
        // Options come from the definition too (fish writes them without dashes).
        assert!(script.contains("fail-on"), "{shell}");
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn bash_accepts_the_script_and_it_completes_every_command() {
    let bash = installed("bash").expect("bash is on every machine the tests run on");
    let script = completion_script("bash");
    let o = pipe(&bash, &["-n"], &script);
    assert!(o.status.success(), "bash -n: {}", stderr(&o));

    // Load the script and ask it what follows `karpdoctor ` and `karpdoctor man `.
    let ask = |words: &str| {
        let probe = format!(
            "{script}\n\
             COMP_WORDS=({words} ''); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n\
             _karpdoctor karpdoctor '' \"${{COMP_WORDS[COMP_CWORD - 1]}}\"\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
        );
        let o = pipe(&bash, &["--norc", "--noprofile"], &probe);
        assert!(o.status.success(), "{words}: {}", stderr(&o));
        stdout(&o)
            .lines()
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
    };
    let top = ask("karpdoctor");
    for command in commands() {
        assert!(
            top.contains(&command),
            "`karpdoctor <TAB>` lacks {command}: {top:?}"
        );
    }
    assert!(top.contains("--kubeconfig"), "{top:?}");
    let shells = ask("karpdoctor completions");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        assert!(shells.contains(shell), "{shells:?}");
    }
}

#[test]
fn zsh_and_fish_accept_their_scripts_where_installed() {
    // Neither shell is installed for CI; a developer machine with them checks the syntax.
    for (shell, flag) in [("zsh", "-n"), ("fish", "--no-execute")] {
        let Some(program) = installed(shell) else {
            eprintln!("skipped: {shell} is not installed");
            continue;
        };
        let o = pipe(&program, &[flag], &completion_script(shell));
        assert!(o.status.success(), "{shell} {flag}: {}", stderr(&o));
    }
}

/// `groff` renders `roff` as plain text, or the test checks only the source when the machine
/// has no groff. Warnings of malformed roff (an unknown macro or escape, a missing argument, a
/// bad number, font or character) are failures; style warnings, which change between groff
/// releases, are not asked for.
fn rendered(roff: &str) -> Option<String> {
    let groff = installed("groff")?;
    let warnings = [
        "-wmac",
        "-wescape",
        "-wmissing",
        "-wnumber",
        "-wsyntax",
        "-wfont",
        "-wchar",
        "-winput",
    ];
    let mut args = vec!["-man", "-Tascii", "-z"];
    args.extend(warnings);
    let lint = pipe(&groff, &args, roff);
    assert!(lint.status.success(), "{}", stderr(&lint));
    assert!(lint.stderr.is_empty(), "groff warns: {}", stderr(&lint));
    // The usual 80 columns (where filling would wrap the examples), without hyphenation, so
    // that names stay whole.
    let o = pipe(&groff, &["-man", "-Tascii", "-rHY=0", "-P-cbou"], roff);
    assert!(o.status.success(), "{}", stderr(&o));
    // Justified lines pad between words; one space is what a reader sees.
    let text = stdout(&o)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n");
    Some(text)
}

/// Roff's hyphen escape: names like `pre-install` are written `pre\-install`.
fn roff_text(s: &str) -> String {
    s.replace('-', "\\-")
}

#[test]
fn the_man_page_is_roff_and_names_every_command() {
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        page.lines()
            .any(|l| l.starts_with(".TH karpdoctor 1 ") && l.contains(version)),
        "no .TH header: {page}"
    );
    let sections: Vec<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .collect();
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS"] {
        assert!(
            sections.contains(&section),
            "{section} missing: {sections:?}"
        );
    }
    let listed: String = page
        .split(".SH SUBCOMMANDS")
        .nth(1)
        .and_then(|rest| rest.split("\n.SH ").next())
        .unwrap()
        .to_string();
    for command in commands() {
        let entry = roff_text(&format!("karpdoctor-{command}(1)"));
        assert!(listed.contains(&entry), "SUBCOMMANDS lacks {entry}");
    }
    // The exit codes and examples of --help are in the page too, one per line as there.
    assert!(sections.contains(&"NOTES"), "{sections:?}");
    assert!(page.contains("\n  karpdoctor explain KD1001 "), "{page}");

    match rendered(&page) {
        Some(text) => {
            for command in commands() {
                let entry = format!("karpdoctor-{command}(1)");
                assert!(text.contains(&entry), "rendered page lacks {entry}");
            }
            assert!(text.contains("--kubeconfig"), "{text}");
            let examples = text.lines().skip_while(|l| !l.starts_with("Examples:"));
            assert_eq!(
                examples
                    .skip(1)
                    .take_while(|l| l.starts_with("karpdoctor"))
                    .count(),
                commands_in_examples(),
                "one example a line: {text}"
            );
        }
        None => eprintln!("skipped rendering: groff is not installed"),
    }
}

/// How many example lines `--help` shows.
fn commands_in_examples() -> usize {
    let help = stdout(&run(&["--help"]));
    let examples = help.lines().skip_while(|l| !l.starts_with("Examples:"));
    let count = examples
        .skip(1)
        .take_while(|l| l.starts_with("  karpdoctor"))
        .count();
    assert!(count >= 5, "{help}");
    count
}

#[test]
fn each_command_has_its_own_page() {
    for command in commands() {
        let o = run(&["man", &command]);
        assert_eq!(o.status.code(), Some(0), "{command}: {}", stderr(&o));
        let page = stdout(&o);
        let th = format!(".TH karpdoctor-{command} 1 ");
        assert!(page.lines().any(|l| l.starts_with(&th)), "{th}: {page}");
        let usage = roff_text(&format!("\\fBkarpdoctor {command}\\fR"));
        assert!(page.contains(&usage), "{command}: no synopsis {usage}");
        if let Some(text) = rendered(&page) {
            assert!(text.contains(&format!("karpdoctor {command}")), "{text}");
        }
    }
}

#[test]
fn man_of_an_unknown_command_is_one_line_exit_2() {
    let o = run(&["man", "frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("karpdoctor: ") && err.contains("frobnicate"),
        "{err}"
    );
    assert!(
        err.contains("reference-policy"),
        "names the commands: {err}"
    );
}

#[test]
fn man_dir_writes_every_page() {
    let dir = scratch("man-pages");
    let out = dir.join("man1");
    let o = run(&["man", "--dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut expected: BTreeSet<String> = commands()
        .iter()
        .map(|c| format!("karpdoctor-{c}.1"))
        .collect();
    expected.insert("karpdoctor.1".to_string());
    let files: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, expected);
    let listed: BTreeSet<String> = stdout(&o)
        .lines()
        .map(|l| {
            Path::new(l)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(listed, expected, "stdout lists the files written");
    // The files are the pages `man` prints.
    let top = std::fs::read_to_string(out.join("karpdoctor.1")).unwrap();
    assert_eq!(top, stdout(&run(&["man"])));
    let list = std::fs::read_to_string(out.join("karpdoctor-list.1")).unwrap();
    assert_eq!(list, stdout(&run(&["man", "list"])));
}

/// A directory holding the built binary as `kubectl-karpdoctor`, installed the two ways
/// people do: krew's symbolic link, and a plain copy.
fn plugin_installs(test: &str) -> (Scratch, Vec<PathBuf>) {
    let dir = scratch(&format!("kubectl-plugin-{test}"));
    let binary = Path::new(env!("CARGO_BIN_EXE_karpdoctor"));
    let mut installs = Vec::new();
    let copied = dir.join("copy");
    std::fs::create_dir_all(&copied).unwrap();
    let copy = copied.join(karpdoctor::cli::KUBECTL_PLUGIN);
    std::fs::copy(binary, &copy).unwrap();
    installs.push(copy);
    #[cfg(unix)]
    {
        let linked = dir.join("link");
        std::fs::create_dir_all(&linked).unwrap();
        let link = linked.join(karpdoctor::cli::KUBECTL_PLUGIN);
        std::os::unix::fs::symlink(binary, &link).unwrap();
        installs.push(link);
    }
    (dir, installs)
}

fn run_as(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("KUBECONFIG", "/nonexistent-kubeconfig")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn installed_as_kubectl_karpdoctor_it_names_itself_so_and_works_the_same() {
    let plain_help = stdout(&run(&["--help"]));
    assert!(
        plain_help.contains("Usage: karpdoctor [OPTIONS]"),
        "{plain_help}"
    );
    assert!(!plain_help.contains("kubectl karpdoctor"), "{plain_help}");
    let plain_list = run(&["list", "-o", "json"]);
    let plain_demo = run(&["demo", "-o", "json"]);

    let (_dir, installs) = plugin_installs("names");
    for plugin in installs {
        let shown = plugin.display();
        let help = run_as(&plugin, &["--help"]);
        assert_eq!(help.status.code(), Some(0), "{shown}");
        let help = stdout(&help);
        assert!(
            help.contains("Usage: kubectl karpdoctor [OPTIONS]"),
            "{shown}: {help}"
        );
        assert!(
            help.contains("  kubectl karpdoctor explain KD1001"),
            "{shown}: {help}"
        );
        assert!(help.contains("Exit codes"), "{shown}");
        let sub = stdout(&run_as(&plugin, &["explain", "--help"]));
        assert!(
            sub.contains("Usage: kubectl karpdoctor explain"),
            "{shown}: {sub}"
        );
        let bad = run_as(&plugin, &["list", "--bogus"]);
        assert_eq!(bad.status.code(), Some(2), "{shown}");
        assert!(
            stderr(&bad).contains("Usage: kubectl karpdoctor list"),
            "{shown}: {}",
            stderr(&bad)
        );

        // The commands themselves are unchanged.
        let list = run_as(&plugin, &["list", "-o", "json"]);
        assert_eq!(list.status.code(), Some(0), "{shown}");
        assert_eq!(list.stdout, plain_list.stdout, "{shown}");
        let demo = run_as(&plugin, &["demo", "-o", "json"]);
        assert_eq!(demo.status.code(), plain_demo.status.code(), "{shown}");
        assert_eq!(demo.status.code(), Some(1), "{shown}");
        let report: serde_json::Value = serde_json::from_slice(&demo.stdout).unwrap();
        let plain: serde_json::Value = serde_json::from_slice(&plain_demo.stdout).unwrap();
        assert_eq!(verdicts(&report), verdicts(&plain), "{shown}");
    }
}

#[test]
fn kubectl_finds_and_runs_the_plugin_where_installed() {
    let Some(kubectl) = installed("kubectl") else {
        eprintln!("skipped: kubectl is not installed");
        return;
    };
    let (_dir, installs) = plugin_installs("kubectl");
    let plugin = &installs[0];
    let dir = plugin.parent().unwrap();
    let mut path = vec![dir.to_path_buf()];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    let o = Command::new(kubectl)
        .args(["karpdoctor", "--help"])
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("KUBECONFIG", "/nonexistent-kubeconfig")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Usage: kubectl karpdoctor [OPTIONS]"),
        "{}",
        stdout(&o)
    );
}

// The krew manifest template (deploy/krew/karpdoctor.yaml). Unknown fields are errors, so a
// misspelt key fails here instead of in krew-index review.

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KrewPlugin {
    api_version: String,
    kind: String,
    metadata: KrewMetadata,
    spec: KrewSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KrewMetadata {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KrewSpec {
    version: String,
    homepage: String,
    short_description: String,
    description: String,
    caveats: Option<String>,
    platforms: Vec<KrewPlatform>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KrewPlatform {
    selector: KrewSelector,
    uri: String,
    sha256: String,
    files: Vec<KrewFile>,
    bin: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KrewSelector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KrewFile {
    from: String,
    to: String,
}

fn krew_template() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/krew/karpdoctor.yaml");
    std::fs::read_to_string(path).unwrap()
}

/// The `${NAME}` placeholders of the YAML (comments left out).
fn placeholders(text: &str) -> BTreeSet<String> {
    let body: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    body.split("${")
        .skip(1)
        .map(|rest| rest.split('}').next().unwrap().to_string())
        .collect()
}

/// Rust target of each krew platform the template offers.
const PLATFORMS: [(&str, &str, &str); 4] = [
    ("linux", "amd64", "x86_64-unknown-linux-musl"),
    ("linux", "arm64", "aarch64-unknown-linux-musl"),
    ("darwin", "amd64", "x86_64-apple-darwin"),
    ("darwin", "arm64", "aarch64-apple-darwin"),
];

#[test]
fn the_krew_manifest_is_a_plugin_for_every_platform_with_marked_placeholders() {
    let text = krew_template();
    let plugin: KrewPlugin = serde_norway::from_str(&text).unwrap();
    assert_eq!(
        plugin.api_version,
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(plugin.kind, "Plugin");
    // krew requires the manifest's file name to be the plugin's name, and kubectl looks for
    // `kubectl-<name>`: the name karpdoctor recognises itself by.
    assert_eq!(plugin.metadata.name, "karpdoctor");
    assert_eq!(
        format!("kubectl-{}", plugin.metadata.name),
        karpdoctor::cli::KUBECTL_PLUGIN
    );
    let spec = &plugin.spec;
    assert_eq!(spec.version, "v${VERSION}");
    assert_eq!(spec.homepage, env!("CARGO_PKG_REPOSITORY"));
    assert!(
        !spec.short_description.is_empty() && spec.short_description.len() <= 50,
        "a few words: {:?}",
        spec.short_description
    );
    assert!(spec.description.len() > 100);
    assert!(spec.caveats.as_deref().is_some_and(|c| !c.is_empty()));

    let mut seen = BTreeSet::new();
    for p in &spec.platforms {
        let os = p.selector.match_labels["os"].as_str();
        let arch = p.selector.match_labels["arch"].as_str();
        assert_eq!(p.selector.match_labels.len(), 2, "{os}/{arch}");
        assert!(seen.insert((os, arch)), "{os}/{arch} twice");
        let (_, _, target) = PLATFORMS
            .iter()
            .find(|(o, a, _)| (*o, *a) == (os, arch))
            .unwrap_or_else(|| panic!("unexpected platform {os}/{arch}"));
        // Each platform downloads its own build and checks it against its own checksum.
        assert_eq!(
            p.uri,
            format!(
                "{}/releases/download/v${{VERSION}}/karpdoctor-v${{VERSION}}-{target}.tar.gz",
                spec.homepage
            ),
            "{os}/{arch}"
        );
        assert_eq!(
            p.sha256,
            format!("${{SHA256_{}_{}}}", os.to_uppercase(), arch.to_uppercase()),
            "{os}/{arch}"
        );
        assert_eq!(p.bin, karpdoctor::cli::KUBECTL_PLUGIN, "{os}/{arch}");
        assert!(
            p.files
                .iter()
                .any(|f| f.from == "karpdoctor" && f.to == p.bin),
            "{os}/{arch}: the archive's binary becomes {}",
            p.bin
        );
    }
    assert_eq!(seen.len(), PLATFORMS.len());

    // Filled in, no placeholder is left and the version is what krew accepts.
    let mut expected: BTreeSet<String> = PLATFORMS
        .iter()
        .map(|(os, arch, _)| format!("SHA256_{}_{}", os.to_uppercase(), arch.to_uppercase()))
        .collect();
    expected.insert("VERSION".to_string());
    assert_eq!(placeholders(&text), expected);
    let mut filled = text.clone();
    for name in &expected {
        let value = if name == "VERSION" {
            env!("CARGO_PKG_VERSION").to_string()
        } else {
            "ab".repeat(32)
        };
        filled = filled.replace(&format!("${{{name}}}"), &value);
    }
    assert!(placeholders(&filled).is_empty());
    let filled: KrewPlugin = serde_norway::from_str(&filled).unwrap();
    let version = filled.spec.version.strip_prefix('v').unwrap();
    let parts: Vec<&str> = version.split('.').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u64>().is_ok()),
        "v<major>.<minor>.<patch>: {}",
        filled.spec.version
    );
    for p in &filled.spec.platforms {
        assert_eq!(p.sha256.len(), 64);
        assert!(p.uri.starts_with("https://") && p.uri.ends_with(".tar.gz"));
    }
}

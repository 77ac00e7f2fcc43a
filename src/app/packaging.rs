//! `completions` and `man`: shell completion scripts and manual pages, generated from the
//! clap definition at run time so they can never disagree with `--help`.

use std::path::Path;

use clap::CommandFactory;

use super::print;
use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::Error;
use crate::report::EXIT_OK;

/// The name the scripts complete and the pages document: the installed binary's. kubectl
/// completes its plugins by a protocol of its own, so the plugin name is not used here.
const BIN: &str = "karpdoctor";

/// `completions SHELL`: the script on stdout, for the user to source or install.
pub(super) fn completions(args: &CompletionsArgs) -> Result<u8, Error> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, BIN, &mut script);
    print(&String::from_utf8_lossy(&script))?;
    Ok(EXIT_OK)
}

/// `man [COMMAND]` prints one page; `man --dir DIR` writes them all.
pub(super) fn man(args: &ManArgs) -> Result<u8, Error> {
    let root = man_command();
    if let Some(dir) = &args.dir {
        return write_pages(&root, dir);
    }
    let cmd = match &args.command {
        None => &root,
        Some(name) => root.find_subcommand(name).ok_or_else(|| Error::Usage {
            message: format!(
                "no command \"{name}\" to show a manual page for (one of: {})",
                page_commands(&root)
                    .map(clap::Command::get_name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?,
    };
    print(&render(cmd)?)?;
    Ok(EXIT_OK)
}

/// The definition the pages are made from, built so that each command knows its page name
/// (`karpdoctor-list`) and usage (`karpdoctor list`). clap's `help` command has no page of its
/// own, so it is left out rather than listed as a page that does not exist.
fn man_command() -> clap::Command {
    let mut cmd = Cli::command().bin_name(BIN).disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// The commands that get a page of their own.
fn page_commands(root: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    root.get_subcommands().filter(|c| !c.is_hide_set())
}

/// The roff source of `cmd`'s page.
fn render(cmd: &clap::Command) -> Result<String, Error> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut roff)
        .map_err(|e| Error::Internal {
            message: format!("rendering the manual page failed: {e}"),
        })?;
    let title = format!(
        ".TH {} 1 \"\" \"{BIN} {}\" \"User Commands\"",
        page_name(cmd),
        crate::VERSION
    );
    Ok(tidy(&String::from_utf8_lossy(&roff), &title))
}

/// Two repairs to clap_mangen's page. Its `.TH` line writes the empty date as nothing at
/// all, which moves the source and the manual name one field left (clap-rs/clap#6040), and
/// the source names the command's own version, which only the top command has: `title`
/// replaces it. The after-help text (exit codes and examples) is laid out in columns, which
/// filling would run together: it goes under NOTES, unfilled.
fn tidy(roff: &str, title: &str) -> String {
    let mut page = String::with_capacity(roff.len() + 64);
    let mut unfilled = false;
    for line in roff.lines() {
        if unfilled && line.starts_with(".SH ") {
            page.push_str(".fi\n");
            unfilled = false;
        }
        if line.starts_with(".TH ") {
            page.push_str(title);
        } else if line == ".SH EXTRA" {
            page.push_str(".SH NOTES\n.nf");
            unfilled = true;
        } else {
            page.push_str(line);
        }
        page.push('\n');
    }
    if unfilled {
        page.push_str(".fi\n");
    }
    page
}

/// `karpdoctor` or `karpdoctor-COMMAND`: the page's title and file name.
fn page_name(cmd: &clap::Command) -> &str {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name())
}

/// Writes `karpdoctor.1` and a page per command into `dir` and lists the files written.
fn write_pages(root: &clap::Command, dir: &Path) -> Result<u8, Error> {
    let io_error = |what: String| {
        move |e: std::io::Error| Error::Io {
            what,
            reason: e.to_string(),
        }
    };
    std::fs::create_dir_all(dir).map_err(io_error(format!("creating {}", dir.display())))?;
    let mut written = String::new();
    for cmd in std::iter::once(root).chain(page_commands(root)) {
        let path = dir.join(format!("{}.1", page_name(cmd)));
        std::fs::write(&path, render(cmd)?)
            .map_err(io_error(format!("writing {}", path.display())))?;
        written.push_str(&format!("{}\n", path.display()));
    }
    print(&written)?;
    Ok(EXIT_OK)
}

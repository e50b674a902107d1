//! `wsp completions SHELL` and `wsp man --out DIR`: what a shell and `man` need to know about
//! `wsp`, generated from the command line's own definition so that they never drift from it.

use std::path::PathBuf;

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

use crate::CliError;
use crate::failure::Failure;
use crate::out::outln;

/// `wsp completions`'s arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Load it for the current shell, or install it where the shell looks:
  bash:        source <(wsp completions bash)
  zsh:         wsp completions zsh > \"${fpath[1]}/_wsp\"
  fish:        wsp completions fish > ~/.config/fish/completions/wsp.fish
  PowerShell:  wsp completions powershell | Out-String | Invoke-Expression"
)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// `wsp man`'s arguments.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory to write the pages to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Prints the completion script of `args.shell` on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::Cli::command(), "wsp", &mut script);
    crate::out::raw(&script)?;
    Ok(())
}

/// Writes `wsp.1` and one page per subcommand (`wsp-files-watch.1`, ...) into `args.out`, and
/// prints how many.
pub fn man(args: &ManArgs) -> Result<(), Failure> {
    let cannot =
        |e: std::io::Error| CliError(format!("cannot write to {}: {e}", args.out.display()));
    std::fs::create_dir_all(&args.out).map_err(cannot)?;
    let command = crate::Cli::command();
    let pages = pages(&command);
    clap_mangen::generate_to(command, &args.out).map_err(cannot)?;
    outln!("wrote {pages} man pages to {}", args.out.display())?;
    Ok(())
}

/// How many pages `clap_mangen` writes for `command`: its own and one per visible subcommand,
/// at every depth (not `help`, which it leaves out).
fn pages(command: &clap::Command) -> usize {
    1 + command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(pages)
        .sum::<usize>()
}

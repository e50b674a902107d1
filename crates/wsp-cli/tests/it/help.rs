//! `wsp --help` and the help of every subcommand, at every depth, as committed insta snapshots:
//! a change to a flag, its default, its environment variable or its wording shows in review.
//! The commands are found by walking the `Commands:` section of each help text, so a new
//! subcommand gets a snapshot without touching this file.

use std::process::Command;

/// `wsp <args> --help`, run with an empty environment so that no `WSP_*` variable of the
/// machine shows up as a value in the text.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .arg("--help")
        .env_clear()
        .output()
        .expect("wsp runs");
    assert!(
        out.status.success(),
        "wsp {args:?} --help failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (without `help`).
fn subcommands(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if inside {
            let Some(entry) = line.strip_prefix("  ") else {
                break;
            };
            if entry.starts_with(' ') {
                continue; // the wrapped description of the entry above
            }
            let name = entry.split_whitespace().next().expect("a command name");
            if name != "help" {
                names.push(name.to_owned());
            }
        }
    }
    names
}

#[test]
fn every_help_text_is_as_committed() {
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        let name = if path.is_empty() {
            "wsp".to_owned()
        } else {
            format!("wsp_{}", path.join("_"))
        };
        insta::assert_snapshot!(name, text);
        seen += 1;
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    assert!(seen > 12, "only {seen} help texts found");
}

#[test]
fn the_command_walker_reads_the_commands_section() {
    let text = "Usage: wsp <COMMAND>\n\nCommands:\n  serve  Run\n  keys   Create,\n         more\n  help   Print\n\nOptions:\n  -h  Help\n";
    assert_eq!(subcommands(text), ["serve", "keys"]);
}

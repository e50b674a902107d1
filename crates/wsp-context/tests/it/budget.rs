//! The invariant, as a property: for any file sizes, budgets and token counter, the rendered
//! text's token count is at most the budget, and whatever is not in full says so inline.

use proptest::prelude::*;
use wsp_context::{
    CharEstimate, ContextConfig, ContextInputs, EntryOutcome, IndexEntry, ReadOutcome, Refusal,
    Section, SessionContext, TokenCounter,
};
use wsp_types::WorkspacePath;

/// Counts words, punctuation and line breaks: a tokenizer whose counts do not add up.
struct WordCounter;

impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        let words = text.split_whitespace().count();
        let marks = text.chars().filter(|c| c.is_ascii_punctuation()).count();
        let lines = text.matches('\n').count();
        words + marks + lines.div_ceil(2)
    }

    fn name(&self) -> &str {
        "words"
    }
}

fn text(len: usize, seed: u64) -> String {
    const PIECES: &[&str] = &[
        "word ",
        "é",
        "長い",
        "\n",
        "- item\n",
        "x",
        "  ",
        "🙂",
        "</workspace_file>",
    ];
    let mut s = String::new();
    let mut state = seed | 1;
    while s.chars().count() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        s.push_str(PIECES[(state % PIECES.len() as u64) as usize]);
    }
    s
}

/// A file: absent, refused, or found with `len` characters.
fn file(kind: u8, len: usize, seed: u64) -> ReadOutcome {
    match kind {
        0 => ReadOutcome::Missing,
        1 => ReadOutcome::Refused(Refusal::SymlinkOutside),
        _ => ReadOutcome::Found(text(len, seed)),
    }
}

fn inputs(sizes: &[(u8, usize)], skills: usize, knowledge: usize, seed: u64) -> ContextInputs {
    let p = |s: String| WorkspacePath::parse(&s).unwrap();
    let f = |i: usize| file(sizes[i].0, sizes[i].1, seed + i as u64);
    ContextInputs {
        source: "generated".into(),
        agents: f(0),
        memory: f(1),
        memory_index: if seed.is_multiple_of(2) {
            ReadOutcome::Missing
        } else {
            file(b'j', 40 + (seed % 200) as usize, seed)
        },
        knowledge: f(2),
        knowledge_files: (0..knowledge)
            .map(|i| p(format!("knowledge/doc-{i:03}.md")))
            .collect(),
        extras: (3..sizes.len())
            .map(|i| (p(format!("extra-{i}.md")), f(i)))
            .collect(),
        skills: (0..skills)
            .map(|i| IndexEntry {
                name: format!("skill-{i}"),
                path: p(format!("skills/skill-{i}/SKILL.md")),
                file: file(sizes[i % sizes.len()].0, 40, seed ^ i as u64),
            })
            .collect(),
        subagents: vec![IndexEntry {
            name: "helper".into(),
            path: p("subagents/helper.md".into()),
            file: ReadOutcome::Found("Helps.\n".into()),
        }],
    }
}

fn check(inputs: &ContextInputs, budget: usize, counter: &dyn TokenCounter, seed: u64) {
    // The host's sections before the files, in some runs.
    let session = seed
        .is_multiple_of(5)
        .then(|| SessionContext::new("2026-11-26"));
    let config = ContextConfig::new(budget)
        .with_strict_budget(true)
        .with_guidance(seed.is_multiple_of(3))
        .with_session(session.map(|s| s.with_session_id(Some("s-1".into()))));
    let ctx = inputs.render(&config, counter);
    let used = counter.count(&ctx.text);
    assert!(used <= budget, "used {used} of {budget}\n{}", ctx.text);
    assert_eq!(ctx.report.used_tokens, used);
    if !ctx.report.collapsed {
        let index_cut = |section| {
            ctx.report.entries.iter().any(|i| {
                i.section == section
                    && matches!(i.outcome, EntryOutcome::Truncated | EntryOutcome::Omitted)
            })
        };
        for e in &ctx.report.entries {
            // The sections before the files are whole or absent; the report says which.
            if matches!(e.section, Section::Session | Section::Guidance) {
                let heading = if e.section == Section::Session {
                    "## Session Context"
                } else {
                    "## Workspace guidance"
                };
                assert_eq!(
                    ctx.text.contains(heading),
                    e.outcome == EntryOutcome::Included,
                    "{e:?}"
                );
                continue;
            }
            let in_index =
                matches!(e.section, Section::Skills | Section::Subagents) && !e.path.ends_with('/');
            if in_index && e.reason.as_deref().is_some_and(|r| r.contains("not shown")) {
                // Its line fell to the index's cut, which has its own marker.
                assert!(index_cut(e.section), "{e:?}");
                continue;
            }
            let marker = match e.outcome {
                EntryOutcome::Included => continue,
                EntryOutcome::Truncated | EntryOutcome::Omitted => format!(
                    "[TRUNCATED: {} tokens omitted, read {}]",
                    e.omitted_tokens, e.path
                ),
                EntryOutcome::Missing => format!("[MISSING: {}]", e.path),
                EntryOutcome::Skipped => format!("[SKIPPED: {}: ", e.path),
                other => panic!("an outcome this test does not know: {other:?}"),
            };
            assert!(ctx.text.contains(&marker), "{marker} not in\n{}", ctx.text);
        }
    }
    // Same inputs, same output.
    assert_eq!(inputs.render(&config, counter), ctx);

    // Not strict: AGENTS.md, when there, is whole; the budget holds unless it alone is larger,
    // which the text says first and the report says too.
    let loose = inputs.render(&config.clone().with_strict_budget(false), counter);
    let agents = loose
        .report
        .entries
        .iter()
        .find(|e| e.section == Section::Agents)
        .unwrap();
    if matches!(inputs.agents, ReadOutcome::Found(_)) {
        assert_eq!(agents.outcome, EntryOutcome::Included, "{}", loose.text);
    }
    assert_eq!(loose.report.used_tokens, counter.count(&loose.text));
    if loose.report.over_budget {
        assert!(loose.text.contains("[OVER BUDGET: "), "{}", loose.text);
        assert!(loose.report.used_tokens > budget || budget == 0);
    } else {
        assert!(
            loose.report.used_tokens <= budget,
            "used {}",
            loose.report.used_tokens
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_budget_is_never_exceeded(
        sizes in prop::collection::vec((0u8..6, 0usize..6000), 3..6),
        skills in 0usize..25,
        knowledge in 0usize..40,
        budget in 0usize..4000,
        seed in any::<u64>(),
    ) {
        let inputs = inputs(&sizes, skills, knowledge, seed);
        check(&inputs, budget, &CharEstimate, seed);
        check(&inputs, budget, &WordCounter, seed);
    }
}

#[test]
fn tiny_budgets_collapse_to_one_line_or_nothing() {
    let inputs = inputs(&[(2, 500), (2, 500), (2, 500)], 3, 3, 7);
    for budget in 0..40 {
        let strict = ContextConfig::new(budget).with_strict_budget(true);
        let ctx = inputs.render(&strict, &CharEstimate);
        assert!(ctx.report.collapsed, "budget {budget}");
        assert!(
            ctx.text.is_empty()
                || ctx
                    .text
                    .starts_with("[TRUNCATED: workspace context omitted"),
            "{}",
            ctx.text
        );
        assert!(CharEstimate.count(&ctx.text) <= budget);
    }
}

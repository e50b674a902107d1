//! Deny rules: glob patterns of the paths inside a Workspace that the agent never sees.
//!
//! A Workspace's rules are its `deny` patterns (by default [`DEFAULT_DENY`]) plus its
//! `deny_extra` patterns, relative to the Workspace's root. A path is hidden when it, or any
//! directory above it inside the Workspace, matches one of them: `.git` hides everything under
//! it. A pattern that ends in `/**` also matches the directory it names, so `.git/**` hides the
//! `.git` entry itself, not only what it holds. Patterns are matched on whole components (`*`
//! never crosses a `/`; `**` spans any number of components) and without regard to case, so
//! that `.ENV` is hidden on a host file system that would open `.env` for that name.
//!
//! A hidden path is absent for every tool: never listed, matched or searched, read as a missing
//! file, and refused to writes with the answer a path outside every Workspace gets. The Stores
//! apply the same rules to the paths they reach through symbolic links, so a link to a hidden
//! file is hidden too.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The deny patterns of a Workspace whose entry has no `deny` key: secrets and version-control
/// internals. `deny = [...]` replaces this list, `deny = []` turns it off, and `deny_extra`
/// adds to it (or to `deny`).
///
/// | patterns | why |
/// |---|---|
/// | `**/.env`, `**/.env.*` | dotenv files: API keys and database passwords for a process's environment (`.env.example` too: a name cannot tell a template from a real file) |
/// | `**/*.pem`, `**/*.key`, `**/*.p12`, `**/*.pfx` | private keys and certificate bundles (TLS, code signing, cloud service accounts) |
/// | `**/id_rsa*`, `**/id_dsa*`, `**/id_ecdsa*`, `**/id_ed25519*` | SSH private keys (and their `.pub` halves) kept outside `.ssh/` |
/// | `**/.ssh/**`, `**/.gnupg/**` | SSH keys, agent sockets, known hosts; GnuPG private keyrings |
/// | `**/.aws/**`, `**/.kube/**`, `**/.docker/config.json` | cloud credentials, cluster tokens, registry logins |
/// | `**/.netrc`, `**/.git-credentials`, `**/.npmrc`, `**/.pypirc` | plain-text passwords and tokens of HTTP, git, npm and PyPI clients (a project's `.npmrc` may hold only a registry URL, or an `_authToken`) |
/// | `**/*.tfstate`, `**/*.tfstate.*` | Terraform state, which records every secret of the infrastructure in plain text |
/// | `**/.git/**`, `**/.hg/**`, `**/.svn/**` | version-control internals: every past version of every file (a secret removed from the tree is still in history), remote URLs with credentials, hooks |
pub const DEFAULT_DENY: &[&str] = &[
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.gnupg/**",
    "**/.aws/**",
    "**/.kube/**",
    "**/.docker/config.json",
    "**/.netrc",
    "**/.git-credentials",
    "**/.npmrc",
    "**/.pypirc",
    "**/*.tfstate",
    "**/*.tfstate.*",
    "**/.git/**",
    "**/.hg/**",
    "**/.svn/**",
];

/// The compiled deny rules of one Workspace.
#[derive(Debug, Clone, Default)]
pub(crate) struct DenyRules {
    /// `None` when there are no patterns: nothing is hidden, nothing is matched.
    set: Option<GlobSet>,
}

impl DenyRules {
    /// No rules: nothing hidden.
    pub fn none() -> Self {
        Self::default()
    }

    /// Compiles `patterns`; the first invalid one is returned with the reason.
    pub fn compile<'p>(
        patterns: impl IntoIterator<Item = &'p str>,
    ) -> Result<Self, (String, String)> {
        let mut builder = GlobSetBuilder::new();
        let mut all: Vec<&str> = Vec::new();
        for pattern in patterns {
            check(pattern).map_err(|why| (pattern.to_owned(), why))?;
            builder.add(glob(pattern).map_err(|why| (pattern.to_owned(), why))?);
            if let Some(dir) = pattern.strip_suffix("/**").filter(|d| !d.is_empty()) {
                builder.add(glob(dir).map_err(|why| (pattern.to_owned(), why))?);
            }
            all.push(pattern);
        }
        if all.is_empty() {
            return Ok(Self::none());
        }
        let set = builder.build().map_err(|e| {
            (
                all.join(", "),
                format!("these patterns are too large to match together: {e}"),
            )
        })?;
        Ok(Self { set: Some(set) })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.set.is_none()
    }

    /// Whether `rel` (components below the Workspace's root) itself matches a pattern; the
    /// directories above it are not looked at. The root (`rel` empty) is never hidden.
    pub fn matches<S: AsRef<str>>(&self, rel: &[S]) -> bool {
        match rel.split_last() {
            None => false,
            Some((name, dir)) => self.matches_in(dir, name.as_ref()),
        }
    }

    /// [`Self::matches`] of the entry `name` of the directory `dir`.
    pub fn matches_in<S: AsRef<str>>(&self, dir: &[S], name: &str) -> bool {
        let Some(set) = &self.set else { return false };
        let mut joined = String::new();
        for c in dir {
            joined.push_str(c.as_ref());
            joined.push('/');
        }
        joined.push_str(name);
        set.is_match(&joined)
    }

    /// Whether `rel` or a directory above it inside the Workspace matches a pattern.
    pub fn hides<S: AsRef<str>>(&self, rel: &[S]) -> bool {
        if self.set.is_none() {
            return false;
        }
        (1..=rel.len()).any(|n| self.matches(&rel[..n]))
    }
}

fn glob(pattern: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// Refuses the forms that can never match a path inside a Workspace, saying how to write them.
fn check(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Err("it is empty".into());
    }
    if pattern.starts_with('/') {
        return Err(format!(
            "patterns are relative to the workspace's root: write {:?}",
            pattern.trim_start_matches('/')
        ));
    }
    if let Some(dir) = pattern.strip_suffix('/') {
        return Err(format!(
            "a pattern names paths, which never end in '/': write {dir:?} (it hides everything \
             under it too)"
        ));
    }
    if pattern.split('/').any(|c| c.is_empty()) {
        return Err("it has an empty component ('//')".into());
    }
    if pattern.split('/').any(|c| c == "." || c == "..") {
        return Err("'.' and '..' never appear in a workspace path".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(patterns: &[&str]) -> DenyRules {
        DenyRules::compile(patterns.iter().copied()).unwrap()
    }

    fn rel(path: &str) -> Vec<&str> {
        path.split('/').collect()
    }

    #[test]
    fn the_default_list_hides_secrets_and_version_control_internals() {
        let d = rules(DEFAULT_DENY);
        for hidden in [
            ".env",
            "app/.env",
            "app/.env.local",
            ".env.example",
            "certs/server.pem",
            "tls.key",
            "a/b/c/store.p12",
            "id_rsa",
            "home/me/id_ed25519.pub",
            ".ssh",
            ".ssh/config",
            "home/me/.ssh/id_ecdsa",
            ".gnupg/private-keys-v1.d/x.key",
            ".aws/credentials",
            ".kube/config",
            ".docker/config.json",
            ".netrc",
            "ci/.npmrc",
            ".pypirc",
            ".git-credentials",
            "infra/prod.tfstate",
            "infra/prod.tfstate.backup",
            ".git",
            ".git/config",
            ".git/objects/ab/cdef",
            "vendor/lib/.git/HEAD",
            ".hg/store",
            ".svn",
            // Any case: a case-insensitive host file system opens `.env` for these.
            ".ENV",
            "Certs/Server.PEM",
            ".Git/config",
        ] {
            assert!(d.hides(&rel(hidden)), "{hidden} should be hidden");
        }
        for visible in [
            "README.md",
            "env",
            "src/environment.rs",
            ".envrc",
            "docs/.env-notes.md",
            "pem",
            "keys.md",
            "src/key.rs",
            "monkey",
            ".gitignore",
            ".github/workflows/ci.yml",
            "git/config",
            ".docker/daemon.json",
            "tfstate.md",
            "my_id_rsa",
        ] {
            assert!(!d.hides(&rel(visible)), "{visible} should be visible");
        }
    }

    #[test]
    fn patterns_match_whole_components_from_the_root() {
        let d = rules(&["secrets", "*.log", "build/**", "docs/private/*.md"]);
        assert!(d.hides(&rel("secrets")));
        assert!(
            d.hides(&rel("secrets/a/b")),
            "everything under a hidden directory"
        );
        assert!(!d.hides(&rel("app/secrets")), "no `**/`: only at the root");
        assert!(d.hides(&rel("debug.log")));
        assert!(!d.hides(&rel("logs/debug.log")), "`*` never crosses a '/'");
        assert!(
            d.hides(&rel("build")),
            "`dir/**` hides the directory itself"
        );
        assert!(d.hides(&rel("build/out/a.o")));
        assert!(!d.hides(&rel("build.rs")));
        assert!(d.hides(&rel("docs/private/plan.md")));
        assert!(!d.hides(&rel("docs/private/sub/plan.md")));
        assert!(!d.hides(&rel("docs/private")));
        assert!(!d.hides::<&str>(&[]), "the root is never hidden");
        assert!(
            !d.matches(&rel("secrets/a")),
            "matches looks at the path alone"
        );
        assert!(d.matches(&rel("secrets")));
    }

    #[test]
    fn no_patterns_hide_nothing() {
        let d = rules(&[]);
        assert!(d.is_empty());
        assert!(!d.hides(&rel(".env")));
        assert!(!rules(&["x"]).is_empty());
    }

    #[test]
    fn patterns_that_can_never_match_are_refused_with_how_to_write_them() {
        for (pattern, why) in [
            ("", "it is empty"),
            ("/.env", "relative to the workspace's root: write \".env\""),
            ("build/", "write \"build\""),
            ("a//b", "empty component"),
            ("a/../b", "'.' and '..'"),
            ("./a", "'.' and '..'"),
            ("a/[b", "unclosed character class"),
            ("{a,b", "unclosed alternate group"),
        ] {
            let err = DenyRules::compile([pattern]).unwrap_err();
            assert_eq!(err.0, pattern);
            assert!(err.1.contains(why), "{pattern:?}: {err:?}");
        }
    }
}

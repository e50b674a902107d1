//! `glob`: files whose path matches a pattern.

use globset::GlobBuilder;

use super::{Vfs, parse_path};
use crate::error::VfsError;
use crate::tools::{GlobArgs, GlobMatches, ToolName};

impl Vfs {
    /// `glob`: files whose path matches a pattern, below `path` (default `/`).
    pub async fn glob(&self, args: GlobArgs) -> Result<GlobMatches, VfsError> {
        let root = parse_path(args.path.as_deref().unwrap_or("/"))?;
        let matcher = GlobBuilder::new(&args.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                VfsError::invalid_argument(format!("the glob pattern is not valid: {}", e.kind()))
            })?
            .compile_matcher();
        let absolute = args.pattern.starts_with('/');
        let (files, mut truncated) = self.search_files(&root, ToolName::Glob).await?;
        let mut matches = Vec::new();
        for f in files {
            let subject = if absolute {
                f.path.as_str().to_owned()
            } else {
                f.path
                    .strip_prefix(&root)
                    .map(|rest| rest.join("/"))
                    .unwrap_or_default()
            };
            if matcher.is_match(&subject) {
                if matches.len() == self.limits.max_glob_results {
                    truncated = true;
                    break;
                }
                matches.push(f.path);
            }
        }
        Ok(GlobMatches { matches, truncated })
    }
}

//! The forms of name that `resolve` may refuse (`NameError::Unsupported`), and which of them a name uses, found
//! by the same parser (gix-revision) without a repository: the shim asks this before it answers a one-object
//! `cat-file` itself, so that what it leaves to git and what `resolve` refuses cannot drift apart.
use gix_hash::Prefix;
use gix_revision::spec::parse::delegate::{self, PeelTo, PrefixHint, ReflogLookup, SiblingBranch, Traversal};

use super::syntax::with_reflog_stand_in;

use super::error::Form;

/// The form a path after `:` uses (`<rev>:<path>`, `:<path>`), if `resolve` may refuse it.
pub(super) fn path_form(path: &[u8]) -> Option<Form> {
    (path.starts_with(b"./") || path.starts_with(b"../")).then_some(Form::RelativePath)
}

/// The form `name` uses that its text alone shows, if `resolve` refuses it.
pub(super) fn text_form(name: &[u8]) -> Option<Form> {
    super::syntax::chained_marks(name).then_some(Form::ChainedMarks)
}

/// The error that stops gix-revision's parse: the delegate notes why before it returns this.
pub(super) fn stop() -> gix_error::Error {
    use gix_error::ErrorExt;
    gix_error::message("the name does not resolve").raise()
}

/// The form of `name` that `resolve` may refuse, if any: the forms refused in some repositories only (paths
/// relative to a work tree, which a bare one refuses otherwise) count. Ids in the compatibility hash are not
/// looked for: whether an id is one depends on the repository's configuration alone.
pub fn refusable(name: &[u8]) -> Option<Form> {
    if let Some(form) = text_form(name) {
        return Some(form);
    }
    let mut forms = Forms::default();
    let _ = gix_revision::spec::parse(with_reflog_stand_in(name).as_ref().into(), &mut forms);
    forms.found
}

/// gix-revision's delegate that resolves nothing and notes the first refused form met.
#[derive(Default)]
struct Forms {
    found: Option<Form>,
}

impl Forms {
    fn form(&mut self, form: Option<Form>) -> gix_error::Result {
        match form {
            Some(form) => {
                self.found.get_or_insert(form);
                Err(stop())
            }
            None => Ok(()),
        }
    }
}

impl delegate::Revision for Forms {
    fn find_ref(&mut self, _name: &gix_object::bstr::BStr) -> gix_error::Result {
        Ok(())
    }

    fn disambiguate_prefix(&mut self, _prefix: Prefix, _hint: Option<PrefixHint<'_>>) -> gix_error::Result {
        Ok(())
    }

    fn reflog(&mut self, _query: ReflogLookup) -> gix_error::Result {
        Ok(())
    }

    fn nth_checked_out_branch(&mut self, _branch_no: usize) -> gix_error::Result {
        Ok(())
    }

    fn sibling_branch(&mut self, _kind: SiblingBranch) -> gix_error::Result {
        Ok(())
    }
}

impl delegate::Navigate for Forms {
    fn traverse(&mut self, _kind: Traversal) -> gix_error::Result {
        Ok(())
    }

    fn peel_until(&mut self, kind: PeelTo<'_>) -> gix_error::Result {
        match kind {
            PeelTo::Path(path) => self.form(path_form(path)),
            _ => Ok(()),
        }
    }

    fn find(&mut self, _regex: &gix_object::bstr::BStr, _negated: bool) -> gix_error::Result {
        Ok(())
    }

    fn index_lookup(&mut self, path: &gix_object::bstr::BStr, _stage: u8) -> gix_error::Result {
        self.form(path_form(path))
    }
}

impl delegate::Kind for Forms {
    fn kind(&mut self, _kind: gix_revision::spec::Kind) -> gix_error::Result {
        Ok(())
    }
}

impl gix_revision::spec::parse::Delegate for Forms {
    fn done(&mut self) -> gix_error::Result {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_resolve_refuses_are_found_without_a_repository() {
        for (name, form) in [
            (&b"HEAD:./file"[..], Some(Form::RelativePath)),
            (b":../file", Some(Form::RelativePath)),
            (b"main@{yesterday}", None),
            (b"main@{2 weeks ago}:./file", Some(Form::RelativePath)),
            (b"@{last friday}~1:dir/file", None),
            (b"@{u}", None),
            (b"main@{push}:file", None),
            (b"main@{push}:./file", Some(Form::RelativePath)),
            (b"@{-1}@{u}", Some(Form::ChainedMarks)),
            (b"main@{u}@{1}~2", Some(Form::ChainedMarks)),
            (b"main@{u}:a}@{b", None),
            (b"HEAD@{1}", None),
            (b"@{-1}", None),
            (b":/text", None),
            (b":file", None),
            (b":2:file", None),
            (b"HEAD^{/text}", None),
            (b"HEAD:dir/./file", None),
            (b"v1^{}~2^2", None),
        ] {
            assert_eq!(refusable(name), form, "{}", crate::fatal::Bytes(name));
        }
    }
}

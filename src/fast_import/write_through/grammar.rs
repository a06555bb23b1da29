//! Where a writing command (`commit`, `tag`, `reset`, `alias`) ends, and which of its lines are reads, so that
//! its lines are forwarded to git verbatim while the reads inside it are answered (or relayed) in order.
//!
//! This follows git's parsers (`parse_new_commit`, `parse_new_tag`, `parse_reset_branch`, `parse_alias`) only
//! as far as the structure goes: git validates every line itself, and a line git must refuse is reported as
//! [`Step::Refused`] so that the caller waits for git to die on it.
use crate::fast_import::command::c_string;
use crate::fast_import::dataref::parse_mark_line;

/// What to do with one line of a writing command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Forward the line.
    Forward,
    /// Forward the line; it defines this mark (git's from now on).
    Mark(u64),
    /// Forward the line; it is a `data` header, and its body follows.
    Data,
    /// A read command inside the command (`ls`, `cat-blob`): answer it, or relay it to git.
    Read,
    /// Forward the line; the command ends with it.
    ForwardAndEnd,
    /// The command ended before this line, which belongs to the top level (git pushes it back).
    Ended,
    /// Forward the line; git dies on it.
    Refused,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// `stage`: how far through git's fixed order of header lines (mark, original-oid, author, committer,
    /// signatures, encoding) the command is.
    CommitHeader {
        stage: u8,
        signature_next: bool,
    },
    CommitParents {
        merges_only: bool,
    },
    FileChanges,
    /// After `M <mode> inline <path>`: `cat-blob`s, then the data.
    InlineData,
    /// After `N inline <commit-ish>`: the data.
    NoteData,
    /// `stage`: mark, from, original-oid, tagger, as in git's order.
    TagHeader {
        stage: u8,
    },
    ResetFrom,
    ResetEnd,
    AliasStart,
    AliasMark,
    AliasTo,
    /// git's `parse_objectish` reads one more line after `to …` and ignores it.
    AliasSwallow,
    Done,
}

/// One writing command being forwarded.
#[derive(Debug)]
pub(crate) struct WriteCommand {
    state: State,
    /// `--signed-commits=abort`: git dies on a commit's first `gpgsig` line.
    abort_on_signature: bool,
}

impl WriteCommand {
    /// The command that `line` starts, if it is a writing command; `abort_on_signature` as above.
    pub(crate) fn start(line: &[u8], abort_on_signature: bool) -> Option<WriteCommand> {
        let state = if line.starts_with(b"commit ") {
            State::CommitHeader { stage: 0, signature_next: false }
        } else if line.starts_with(b"tag ") {
            State::TagHeader { stage: 0 }
        } else if line.starts_with(b"reset ") {
            State::ResetFrom
        } else if line == b"alias" {
            State::AliasStart
        } else {
            return None;
        };
        Some(WriteCommand { state, abort_on_signature })
    }

    /// Is the command over (after its last line or its data)?
    pub(crate) fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Classifies the next line of the command (comments included: git skips them between lines, and so may we,
    /// but forwarding them keeps git's input the frontend's).
    pub(crate) fn step(&mut self, raw: &[u8]) -> Step {
        let line = c_string(raw);
        if raw.first() == Some(&b'#') && self.state != State::AliasSwallow {
            return Step::Forward;
        }
        let (step, next) = match self.state {
            State::CommitHeader { stage, signature_next } => {
                commit_header(line, stage, signature_next, self.abort_on_signature)
            }
            State::CommitParents { merges_only } => match line {
                _ if line.starts_with(b"from ") && !merges_only => {
                    (Step::Forward, State::CommitParents { merges_only: true })
                }
                _ if line.starts_with(b"merge ") => (Step::Forward, State::CommitParents { merges_only: true }),
                _ => file_change(line),
            },
            State::FileChanges => file_change(line),
            State::InlineData if line.starts_with(b"cat-blob ") => (Step::Read, State::InlineData),
            State::InlineData | State::NoteData => expect_data(line, State::FileChanges),
            State::TagHeader { stage } => tag_header(line, stage),
            State::ResetFrom if line.starts_with(b"from ") => (Step::Forward, State::ResetEnd),
            State::ResetFrom | State::ResetEnd if raw.is_empty() => (Step::ForwardAndEnd, State::Done),
            State::ResetFrom | State::ResetEnd => (Step::Ended, State::Done),
            State::AliasStart if raw.is_empty() => (Step::Forward, State::AliasMark),
            State::AliasStart | State::AliasMark => match parse_mark_line(line) {
                Some(mark) => (Step::Mark(mark), State::AliasTo),
                None => (Step::Refused, State::Done),
            },
            State::AliasTo if line.starts_with(b"to ") => (Step::Forward, State::AliasSwallow),
            State::AliasTo => (Step::Refused, State::Done),
            State::AliasSwallow if raw.first() == Some(&b'#') => (Step::Forward, State::AliasSwallow),
            State::AliasSwallow => (Step::ForwardAndEnd, State::Done),
            State::Done => (Step::Ended, State::Done),
        };
        self.state = next;
        step
    }

    /// The end of the stream came inside the command. git finishes a commit there (or dies on what is missing).
    pub(crate) fn at_eof(&mut self) {
        self.state = State::Done;
    }
}

fn commit_header(line: &[u8], stage: u8, signature_next: bool, abort_on_signature: bool) -> (Step, State) {
    let at = |stage| State::CommitHeader { stage, signature_next: false };
    if signature_next {
        return expect_data(line, at(stage));
    }
    match header_line(line, stage, &[b"mark :", b"original-oid ", b"author ", b"committer "]) {
        Some((0, next)) => (Step::Mark(parse_mark_line(line).expect("mark line")), at(next)),
        Some((_, next)) => (Step::Forward, at(next)),
        // git requires a committer line.
        None if stage < 4 => (Step::Refused, State::Done),
        // git 2.55 reads signatures right after the committer, before `encoding`; each brings its data.
        None if stage == 4 && line.starts_with(b"gpgsig ") => match abort_on_signature {
            false if valid_signature_header(&line[b"gpgsig ".len()..]) => {
                (Step::Forward, State::CommitHeader { stage, signature_next: true })
            }
            _ => (Step::Refused, State::Done),
        },
        None if stage < 5 && line.starts_with(b"encoding ") => (Step::Forward, at(5)),
        None if line.starts_with(b"data ") => (Step::Data, State::CommitParents { merges_only: false }),
        None => (Step::Refused, State::Done),
    }
}

/// Which of the optional header lines `order` (in git's order, from position `stage` on) `line` is; returns
/// its position and the stage after it.
fn header_line(line: &[u8], stage: u8, order: &[&[u8]]) -> Option<(usize, u8)> {
    (usize::from(stage)..order.len()).find(|&i| line.starts_with(order[i])).map(|i| (i, i as u8 + 1))
}

/// One line of a commit's file-change list (git's loop in `parse_new_commit`).
fn file_change(line: &[u8]) -> (Step, State) {
    if line.is_empty() {
        (Step::ForwardAndEnd, State::Done)
    } else if let Some(rest) = line.strip_prefix(b"M ") {
        // `M <mode> SP <dataref> SP <path>`: an `inline` dataref brings its data (after any cat-blobs).
        let mut fields = rest.splitn(3, |&b| b == b' ');
        let inline = fields.nth(1) == Some(b"inline") && fields.next().is_some();
        (Step::Forward, if inline { State::InlineData } else { State::FileChanges })
    } else if line.starts_with(b"N inline ") {
        (Step::Forward, State::NoteData)
    } else if [&b"D "[..], b"R ", b"C ", b"N "].iter().any(|p| line.starts_with(p)) || line == b"deleteall" {
        (Step::Forward, State::FileChanges)
    } else if line.starts_with(b"ls ") || line.starts_with(b"cat-blob ") {
        (Step::Read, State::FileChanges)
    } else {
        (Step::Ended, State::Done)
    }
}

/// git's `parse_new_tag`: mark?, from, original-oid?, tagger?, data.
fn tag_header(line: &[u8], stage: u8) -> (Step, State) {
    let at = |stage| State::TagHeader { stage };
    match stage {
        0 if parse_mark_line(line).is_some() => (Step::Mark(parse_mark_line(line).expect("mark line")), at(1)),
        0 | 1 if line.starts_with(b"from ") => (Step::Forward, at(2)),
        0 | 1 => (Step::Refused, State::Done),
        2 if line.starts_with(b"original-oid ") => (Step::Forward, at(3)),
        2 | 3 if line.starts_with(b"tagger ") => (Step::Forward, at(4)),
        _ if line.starts_with(b"data ") => (Step::Data, State::Done),
        _ => (Step::Refused, State::Done),
    }
}

/// git's `parse_one_signature`: `<hash-algo> SP <format>`, the algorithm `sha1` or `sha256`, the format (the
/// rest of the line) one git signs with or `unknown`. git dies on anything else (git before 2.50 on any
/// `gpgsig`, which it does not know: it wanted the commit's data there).
fn valid_signature_header(args: &[u8]) -> bool {
    let Some(space) = memchr::memchr(b' ', args) else { return false };
    let (algo, format) = (&args[..space], &args[space + 1..]);
    matches!(algo, b"sha1" | b"sha256") && matches!(format, b"openpgp" | b"x509" | b"ssh" | b"unknown")
}

fn expect_data(line: &[u8], after: State) -> (Step, State) {
    if line.starts_with(b"data ") { (Step::Data, after) } else { (Step::Refused, State::Done) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(lines: &[&[u8]]) -> Vec<Step> {
        let mut command = WriteCommand::start(lines[0], false).expect("a writing command");
        lines[1..].iter().map(|line| command.step(line)).collect()
    }

    #[test]
    fn a_commit_ends_at_an_empty_line_or_a_top_level_command() {
        use Step::*;
        let commit: [&[u8]; 12] = [
            b"commit refs/heads/x",
            b"mark :5",
            b"committer C <c@e> 1 +0000",
            b"data 0",
            b"from :1",
            b"merge :2",
            b"M 100644 inline a b",
            b"cat-blob :1",
            b"data 3",
            b"ls \"a b\"",
            b"deleteall",
            b"get-mark :5",
        ];
        assert_eq!(
            steps(&commit),
            [Mark(5), Forward, Data, Forward, Forward, Forward, Read, Data, Read, Forward, Ended]
        );
        assert_eq!(steps(&[b"commit x", b"committer c", b"data 0", b""]), [Forward, Data, ForwardAndEnd]);
        assert_eq!(
            steps(&[b"commit x", b"committer c", b"data 0", b"M 1 :1 inline", b"ls :1 a"]),
            [Forward, Data, Forward, Read]
        );
    }

    #[test]
    fn tags_resets_and_aliases_end_where_git_stops_reading() {
        use Step::*;
        assert_eq!(
            steps(&[b"tag v1", b"mark :3", b"from :1", b"tagger t", b"data 2"]),
            [Mark(3), Forward, Forward, Data]
        );
        assert_eq!(steps(&[b"reset refs/heads/x", b"from :1", b""]), [Forward, ForwardAndEnd]);
        assert_eq!(steps(&[b"reset refs/heads/x", b"cat-blob :1"]), [Ended]);
        assert_eq!(
            steps(&[b"alias", b"", b"mark :2", b"to :1", b"get-mark :2"]),
            [Forward, Mark(2), Forward, ForwardAndEnd]
        );
        assert_eq!(steps(&[b"alias", b"to :1"]), [Refused]);
        assert_eq!(steps(&[b"commit x", b"bogus"]), [Refused]);
        assert_eq!(steps(&[b"commit x", b"data 0"]), [Refused], "no committer");
        assert_eq!(steps(&[b"commit x", b"committer c", b"author a"]), [Forward, Refused], "out of order");
        assert_eq!(steps(&[b"tag v", b"tagger t"]), [Refused], "no from");
    }

    #[test]
    fn signatures_follow_the_committer_and_bring_data() {
        use Step::*;
        let signed: [&[u8]; 9] = [
            b"commit x",
            b"committer c",
            b"gpgsig sha1 openpgp",
            b"data 3",
            b"gpgsig sha256 ssh",
            b"data <<E",
            b"encoding iso-8859-1",
            b"data 0",
            b"",
        ];
        assert_eq!(steps(&signed), [Forward, Forward, Data, Forward, Data, Forward, Data, ForwardAndEnd]);
        for bad in [&b"gpgsig sha1"[..], b"gpgsig md5 openpgp", b"gpgsig sha1 pgp", b"gpgsig sha1 openpgp x"] {
            assert_eq!(steps(&[b"commit x", b"committer c", bad]), [Forward, Refused], "{}", bad.escape_ascii());
        }
        let after_encoding = steps(&[b"commit x", b"committer c", b"encoding e", b"gpgsig sha1 openpgp"]);
        assert_eq!(after_encoding, [Forward, Forward, Refused], "git wants the data after `encoding`");
        assert_eq!(steps(&[b"commit x", b"author a", b"gpgsig sha1 ssh"]), [Forward, Refused], "no committer");
        let mut abort = WriteCommand::start(b"commit x", true).unwrap();
        assert_eq!([abort.step(b"committer c"), abort.step(b"gpgsig sha1 ssh")], [Forward, Refused]);
    }
}

//! Every flag, feature and `option git` that names a file, against every way the file can be wrong: missing, a
//! directory, unreadable (mode 000) and malformed. Each row runs through `git fast-import` and cat-blobd (see
//! [`Case::expect`]): exit status, cat-blob fd, stdout, first stderr line, and the files each program writes
//! must be the same.
//!
//! "Unreadable" means what mode 000 does to the user running the tests: as root, both programs read the file
//! anyway (root ignores permission bits); as anyone else, both fail with `Permission denied`. Either way the
//! comparison holds; the expected outcome stated for git is the one for the user running the test.
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::util::case::{Case, Checks, case};

/// The file every row names, relative to the repository (the programs' working directory).
const FILE: &str = "f.marks";
/// What a well-formed file holds: mark 1 is the `basic` fixture's second blob.
const VALID: &str = ":1 {blob2}\n";
/// A `rewrite-submodules-to` file for rows that need a valid counterpart: mark 1 is the first blob, so a
/// `-from` file mapping mark 1 to `{blob2}` makes `cat-blob {blob2}` answer with `{blob}`.
const TO_FILE: &str = "to.marks";
const TO: &str = ":1 {blob}\n";

#[derive(Clone, Copy, Debug)]
enum Condition {
    Missing,
    Directory,
    Unreadable,
    Malformed,
}

const CONDITIONS: [Condition; 4] =
    [Condition::Missing, Condition::Directory, Condition::Unreadable, Condition::Malformed];

impl Condition {
    /// Puts the file at `path` (relative to the repository) into this condition, in both repositories.
    fn apply(self, case: Case, path: &'static str) -> Case {
        match self {
            Condition::Missing => case,
            Condition::Directory => case.prepare(move |repo| fs::create_dir_all(repo.join(path)).expect("mkdir")),
            Condition::Unreadable => case.file(path, VALID).prepare(move |repo| chmod_000(&repo.join(path))),
            Condition::Malformed => case.file(path, "garbage\n"),
        }
    }
}

fn chmod_000(path: &Path) {
    fs::set_permissions(path, fs::Permissions::from_mode(0o000)).expect("chmod 000");
}

/// Mode 000 stops this user from reading (everyone but root).
fn mode_000_stops_reading() -> bool {
    rustix::process::geteuid().as_raw() != 0
}

/// git's outcome for one condition: exit status and (a part of) its first stderr line, as in [`Case::expect`].
type Outcome = (i32, &'static str);

/// One way of naming the file.
struct Form {
    what: &'static str,
    /// Leading stream lines (`feature`/`option` lines naming [`FILE`]).
    features: &'static str,
    /// git fast-import flags.
    flags: &'static [&'static str],
    /// Where the named file is, relative to the repository.
    path: &'static str,
    /// The program writes the file: compare it (and its `.lock`) afterwards.
    writes: bool,
    /// git's outcome for missing, directory, unreadable (as root) and malformed.
    git: [Outcome; 4],
}

/// The rows for files that are read as marks files (`read_mark_file`).
const READ: [Outcome; 4] = [
    (128, "fatal: cannot read 'f.marks': No such file or directory"),
    (128, "fatal: cannot read 'f.marks': Is a directory"),
    (0, ""),
    (128, "fatal: corrupt mark line: garbage"),
];
/// The same under `relative-marks` (git names `<git dir>/info/fast-import/f.marks`).
const READ_RELATIVE: [Outcome; 4] = [
    (128, "/info/fast-import/f.marks': No such file or directory"),
    (128, "/info/fast-import/f.marks': Is a directory"),
    (0, ""),
    (128, "fatal: corrupt mark line: garbage"),
];
/// `import-marks-if-exists`: only a missing file is fine.
const READ_IF_EXISTS: [Outcome; 4] = [(0, ""), READ[1], READ[2], READ[3]];
/// Marks files written at the end (`dump_marks`): a directory is an `error:` and exit status 1.
const EXPORT_MARKS: [Outcome; 4] =
    [(0, ""), (1, "error: unable to write file f.marks: Is a directory"), (0, ""), (0, "")];
const EXPORT_MARKS_RELATIVE: [Outcome; 4] =
    [(0, ""), (1, "/info/fast-import/f.marks: Is a directory"), (0, ""), (0, "")];
/// `export-pack-edges`: opened for appending at once (`xfopen(.., "a")`).
const PACK_EDGES: [Outcome; 4] =
    [(0, ""), (128, "fatal: could not open 'f.marks' for writing: Is a directory"), (0, ""), (0, "")];

const UNSAFE: &[&str] = &["--allow-unsafe-features"];
const RELATIVE: &str = "info/fast-import/f.marks";

const FORMS: &[Form] = &[
    Form {
        what: "--import-marks",
        features: "",
        flags: &["--import-marks=f.marks"],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "--import-marks-if-exists",
        features: "",
        flags: &["--import-marks-if-exists=f.marks"],
        path: FILE,
        writes: false,
        git: READ_IF_EXISTS,
    },
    Form {
        what: "feature import-marks",
        features: "feature import-marks=f.marks\n",
        flags: UNSAFE,
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "feature import-marks-if-exists",
        features: "feature import-marks-if-exists=f.marks\n",
        flags: UNSAFE,
        path: FILE,
        writes: false,
        git: READ_IF_EXISTS,
    },
    Form {
        what: "feature relative-marks, feature import-marks",
        features: "feature relative-marks\nfeature import-marks=f.marks\n",
        flags: UNSAFE,
        path: RELATIVE,
        writes: false,
        git: READ_RELATIVE,
    },
    Form {
        what: "--relative-marks --import-marks",
        features: "",
        flags: &["--relative-marks", "--import-marks=f.marks"],
        path: RELATIVE,
        writes: false,
        git: READ_RELATIVE,
    },
    Form {
        what: "--rewrite-submodules-from",
        features: "",
        flags: &["--rewrite-submodules-from=s:f.marks", "--rewrite-submodules-to=s:to.marks"],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "--rewrite-submodules-to",
        features: "",
        flags: &["--rewrite-submodules-to=s:f.marks"],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "feature rewrite-submodules-from",
        features: "feature rewrite-submodules-from=s:f.marks\nfeature rewrite-submodules-to=s:to.marks\n",
        flags: &[],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "feature rewrite-submodules-to",
        features: "feature rewrite-submodules-to=s:f.marks\n",
        flags: &[],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        // Submodule rewrite files are relative to the working directory even under relative-marks.
        what: "--relative-marks --rewrite-submodules-to",
        features: "",
        flags: &["--relative-marks", "--rewrite-submodules-to=s:f.marks"],
        path: FILE,
        writes: false,
        git: READ,
    },
    Form {
        what: "--export-marks",
        features: "",
        flags: &["--export-marks=f.marks"],
        path: FILE,
        writes: true,
        git: EXPORT_MARKS,
    },
    Form {
        what: "feature export-marks",
        features: "feature export-marks=f.marks\n",
        flags: UNSAFE,
        path: FILE,
        writes: true,
        git: EXPORT_MARKS,
    },
    Form {
        what: "--relative-marks --export-marks",
        features: "",
        flags: &["--relative-marks", "--export-marks=f.marks"],
        path: RELATIVE,
        writes: true,
        git: EXPORT_MARKS_RELATIVE,
    },
    Form {
        what: "--export-pack-edges",
        features: "",
        flags: &["--export-pack-edges=f.marks"],
        path: FILE,
        writes: true,
        git: PACK_EDGES,
    },
    Form {
        what: "option git export-pack-edges",
        features: "option git export-pack-edges=f.marks\n",
        flags: &[],
        path: FILE,
        writes: true,
        git: PACK_EDGES,
    },
];

/// The row for one form and condition. Forms that read marks also export them, so what was read shows in
/// `out.marks`; `cat-blob {blob2}` shows whether a `-from` file translated it.
fn row(form: &Form, condition: Condition) -> Case {
    let stream = format!("{}cat-blob {{blob2}}\n", form.features);
    let mut case = case(&format!("{} × {condition:?}", form.what), stream).args(form.flags).file(TO_FILE, TO);
    if form.writes {
        case = case.compare(form.path);
    } else {
        case = case.args(&["--export-marks=out.marks"]).compare("out.marks");
    }
    condition.apply(case, form.path)
}

/// git's outcome for `condition`, adjusted for a user that mode 000 stops.
fn git_outcome(form: &Form, condition: Condition) -> (i32, String) {
    let (code, message) = form.git[condition as usize];
    if matches!(condition, Condition::Unreadable) && mode_000_stops_reading() && !form.writes {
        let shown = if form.path == RELATIVE { "/info/fast-import/f.marks" } else { "f.marks" };
        return (128, format!("{shown}': Permission denied"));
    }
    (code, message.to_owned())
}

#[test]
fn every_file_argument_in_every_condition() {
    let mut checks = Checks::default();
    for form in FORMS {
        for condition in CONDITIONS {
            let (code, message) = git_outcome(form, condition);
            row(form, condition).check(&mut checks, code, &message);
        }
    }
    checks.finish();
}

/// git reads a submodule rewrite file when it parses the option, so its error comes before those of later
/// lines and flags, and a `-to` file is read even when no `-from` names its submodule.
#[test]
fn submodule_rewrite_files_are_read_when_the_option_is() {
    let mut checks = Checks::default();
    case("a later bad feature", "feature rewrite-submodules-to=s:nosuch\nfeature bogus\ncat-blob {blob2}\n").check(
        &mut checks,
        128,
        "fatal: cannot read 'nosuch': No such file or directory",
    );
    case("a later bad flag", "cat-blob {blob2}\n").args(&["--rewrite-submodules-to=s:nosuch", "--depth=x"]).check(
        &mut checks,
        128,
        "fatal: cannot read 'nosuch': No such file or directory",
    );
    case("a -from file translates", "cat-blob {blob2}\n")
        .file(FILE, VALID)
        .file(TO_FILE, TO)
        .args(&["--rewrite-submodules-from=s:f.marks", "--rewrite-submodules-to=s:to.marks"])
        .check(&mut checks, 0, "");
    checks.finish();
}

//! The one integration-test binary (ripgrep-style): differential tests against the installed git, an interactive
//! frontend, corrupt-input smoke tests, and checks of the checked-in fixture outputs. Helpers live in `util`.

mod cat_file;
mod cat_file_255;
mod cat_file_dates;
mod cat_file_names;
mod cat_file_upstream;
mod clients;
mod corrupt;
mod differential;
mod fast_import_255;
mod file_args;
mod fuzz_replay;
mod generated;
mod grammar;
mod hardening;
mod history;
mod inflate_prefix;
mod interactive;
mod ls;
mod marks;
mod pinned;
mod scale;
mod server;
mod server_cat_file;
mod server_hardening;
mod server_root;
mod server_root_changes;
mod server_root_files;
mod server_root_refs;
mod server_root_worktrees;
mod shim;
mod util;
mod write_through;

//! The one integration-test binary (ripgrep-style): differential tests against the installed git, an interactive
//! frontend, corrupt-input smoke tests, and checks of the checked-in fixture outputs. Helpers live in `util`.

mod corrupt;
mod differential;
mod generated;
mod grammar;
mod interactive;
mod ls;
mod pinned;
mod util;

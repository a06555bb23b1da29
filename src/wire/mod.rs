//! The daemon's wire: what travels on its Unix socket ([`protocol`]), who is on the other end ([`peer`]), and the
//! client side that `cat-blobd connect`, `cat-blobd stats` and the shim use ([`client`]). The daemon
//! (`crate::server`) and its clients both stand on this module; it knows nothing of either.
pub mod client;
pub mod peer;
pub mod protocol;

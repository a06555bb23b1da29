//! Objects as the read commands of a stream see them: the blobs it defined, then the repository.
use std::collections::HashMap;
use std::sync::Arc;

use super::marks::{Marks, ObjectLookup};
use super::stream_blobs::{StreamBlobError, StreamBlobs};
use crate::store::{Data, Kind, Object, ObjectId, ReadError, Resolver, Store, oid};

/// Objects as the stream's read commands see them: blobs defined earlier in the stream first, then the
/// repository (with replace refs applied), and the stream's marks.
pub(crate) trait ObjectSource {
    /// The repository's hash: ids of any other length are invalid datarefs.
    fn object_hash(&self) -> gix_hash::Kind;
    /// The object a mark names, if the mark was declared (defined in the stream or imported).
    fn mark(&self, mark: u64) -> Option<ObjectId>;
    /// Reads an object: `Ok(None)` if it does not exist, an error if it exists but is damaged.
    fn read(&mut self, id: &oid) -> Result<Option<Object>, ReadError>;
    /// Did this stream write `id` (into git's in-progress pack), rather than find it in an existing pack? git's
    /// `load_tree` says `not a tree` for such an object that is not a tree, and `can't load tree` otherwise.
    fn written_by_stream(&self, _id: &oid) -> bool {
        false
    }
    /// git's `parse_mapped_oid_hex` for this stream: a full id of the repository's hash, or one that the
    /// submodule rewrite map translates. Returns the id and what follows it.
    fn parse_oid<'i>(&self, input: &'i [u8]) -> Option<(ObjectId, &'i [u8])> {
        crate::fast_import::dataref::parse_oid_hex(input, self.object_hash())
    }
}

/// The stream's view of objects for one command: stream blobs, then the store.
pub(super) struct Objects<'s> {
    pub(super) store: &'s Store,
    pub(super) resolver: &'s mut Resolver,
    pub(super) blobs: &'s StreamBlobs,
    pub(super) marks: &'s Marks,
    pub(super) rewrites: &'s HashMap<ObjectId, ObjectId>,
}

impl ObjectSource for Objects<'_> {
    fn object_hash(&self) -> gix_hash::Kind {
        self.store.object_hash()
    }

    fn mark(&self, mark: u64) -> Option<ObjectId> {
        self.marks.get(mark)
    }

    fn read(&mut self, id: &oid) -> Result<Option<Object>, ReadError> {
        match written_blob(self.blobs, self.store, id) {
            Ok(Some(data)) => return Ok(Some(Object { kind: Kind::Blob, data })),
            Ok(None) => {}
            Err(err) => {
                return Err(ReadError {
                    oid: id.to_owned(),
                    location: crate::store::Location::Caller("the stream's blobs"),
                    damage: crate::store::Damage::Caller(Arc::new(err)),
                });
            }
        }
        self.store.read(id, self.resolver)
    }

    fn parse_oid<'i>(&self, input: &'i [u8]) -> Option<(ObjectId, &'i [u8])> {
        crate::fast_import::dataref::parse_mapped_oid_hex(input, self.store.object_hash(), self.rewrites)
    }

    fn written_by_stream(&self, id: &oid) -> bool {
        self.blobs.contains(&id.to_owned()) && !self.store.in_pack(id)
    }
}

/// The objects a marks file may name, as git's `insert_object_entry` finds them: the stream's blobs and the
/// repository's objects (through replace refs).
pub(super) struct MarkedObjects<'s> {
    pub(super) store: &'s Store,
    pub(super) blobs: &'s StreamBlobs,
}

impl ObjectLookup for MarkedObjects<'_> {
    fn object_hash(&self) -> gix_hash::Kind {
        self.store.object_hash()
    }

    fn unlisted<'a>(&mut self, count: usize, id_at: &dyn Fn(usize) -> &'a oid) -> Vec<usize> {
        self.store.unlisted_in_packs(count, id_at)
    }

    fn exists(&mut self, id: &oid) -> bool {
        // A replace chain too deep to follow counts as absence.
        self.blobs.contains(&id.to_owned()) || self.store.exists(id).unwrap_or(false)
    }
}

/// The bytes of a blob this stream wrote, as git reads it back. git writes a stream blob into its own pack, and
/// reads it from there, only when no existing pack has it (a loose copy does not count: `store_object` checks
/// packs only). Otherwise git reads the repository's copy, through replace refs like any object: `None` here.
pub(super) fn written_blob(blobs: &StreamBlobs, store: &Store, id: &oid) -> Result<Option<Data>, StreamBlobError> {
    let id = id.to_owned();
    if !blobs.contains(&id) || store.in_pack(&id) {
        return Ok(None);
    }
    blobs.get(&id)
}

/// The repository alone, for reads that the stream's state cannot change (an `ls` on a resolver thread): the
/// front end sends one there only when no blob of the stream could be met on the way and the tree-ish is
/// already resolved.
pub(super) struct StoreObjects<'s> {
    pub(super) store: &'s Store,
    pub(super) resolver: &'s mut Resolver,
}

impl ObjectSource for StoreObjects<'_> {
    fn object_hash(&self) -> gix_hash::Kind {
        self.store.object_hash()
    }

    fn mark(&self, _mark: u64) -> Option<ObjectId> {
        None
    }

    fn read(&mut self, id: &oid) -> Result<Option<Object>, ReadError> {
        self.store.read(id, self.resolver)
    }
}

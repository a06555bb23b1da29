#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (then `cargo fuzz cmin` keeps the useful ones).

    python3 fuzz/make-seeds.py [FIXTURES_DIR]

Seeds come from fuzz/repo (its pack, index and loose objects, and streams that ask for its objects) and, when
FIXTURES_DIR (the output of fixtures/make-fixtures.sh) is given, from the small packs and loose objects of the
test fixtures. Each input is named by its SHA-1, as libFuzzer names corpus files.
"""
import hashlib, os, struct, sys, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "repo")
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from packfile import entry_header, parse_entry, read_idx  # noqa: E402


def put(target, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def read_idx_offsets(path):
    """(id bytes, offset) of a version-2 index, in id order."""
    return [(oid, offset) for oid, offset, _ in read_idx(open(path, "rb").read())]


def entry(pack, at):
    """(type, size, data offset, OFS_DELTA base offset or REF_DELTA base id)"""
    typ, size, _, data, base = parse_entry(pack, at)
    return typ, size, data, base


def inflate(pack, at):
    return zlib.decompressobj().decompress(pack[at:])


def pack_seed(pack_path):
    pack = open(pack_path, "rb").read()
    entries = read_idx_offsets(pack_path[:-5] + ".idx")[:255]
    offsets = [o for _, o in entries]
    return bytes([len(offsets)]) + b"".join(struct.pack("<I", o << 1) for o in offsets) + pack


def delta_seeds(pack_path):
    pack = open(pack_path, "rb").read()
    by_offset = {}

    def content(at):
        if at in by_offset:
            return by_offset[at]
        typ, size, data, base = entry(pack, at)
        raw = inflate(pack, data)
        if typ == 6:
            raw = None  # resolved below by the caller
        by_offset[at] = raw
        return raw

    seeds = []
    for _, at in sorted(read_idx_offsets(pack_path[:-5] + ".idx"), key=lambda e: e[1]):
        typ, size, data, base = entry(pack, at)
        if typ == 6:
            b = content(base)
            d = inflate(pack, data)
            if b is not None and len(b) < 65536:
                seeds.append(struct.pack("<H", len(b)) + b + d)
                by_offset[at] = apply(b, d)
        else:
            content(at)
    return seeds


def apply(base, delta):
    def size(p):
        s = shift = 0
        while True:
            c = delta[p]
            p += 1
            s |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return s, p
    _, p = size(0)
    _, p = size(p)
    out = bytearray()
    while p < len(delta):
        c = delta[p]
        p += 1
        if c & 0x80:
            off = ln = 0
            for bit in range(4):
                if c & (1 << bit):
                    off |= delta[p] << (8 * bit)
                    p += 1
            for bit in range(3):
                if c & (0x10 << bit):
                    ln |= delta[p] << (8 * bit)
                    p += 1
            out += base[off:off + (ln or 0x10000)]
        else:
            out += delta[p:p + c]
            p += c
    return bytes(out)


def crafted_pack(objects):
    """objects: list of (type, payload, ref id or None). Returns a pack-target input (offsets in order)."""
    body = b"PACK" + struct.pack(">II", 2, len(objects))
    offsets = []
    for typ, payload, ref in objects:
        offsets.append(len(body))
        body += entry_header(typ, len(payload)) + (ref or b"") + zlib.compress(payload)
    body += hashlib.sha1(body).digest()
    return bytes([len(objects)]) + b"".join(struct.pack("<I", o << 1) for o in offsets) + body


def inflate_prefix_seeds(pack_path):
    """zlib streams: every entry of the pack (up to where its stream ends), and samples deflated at every level."""
    pack = open(pack_path, "rb").read()
    for _, at in read_idx_offsets(pack_path[:-5] + ".idx"):
        _, _, data, _ = entry(pack, at)
        d = zlib.decompressobj()
        d.decompress(pack[data:])
        put("inflate_prefix", pack[data:len(pack) - len(d.unused_data)])
    samples = [b"", b"a", b"abc" * 40, bytes(range(256)) * 3, b"".join(b"line %d\n" % (n % 9) for n in range(400))]
    for level in range(10):
        for sample in samples:
            put("inflate_prefix", zlib.compress(sample, level))


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else None
    pack_dir = os.path.join(REPO, "objects", "pack")
    repo_pack = [os.path.join(pack_dir, f) for f in os.listdir(pack_dir) if f.endswith(".pack")][0]

    # idx: the repository's own index, and a version-1 index of the same pack.
    idx = open(repo_pack[:-5] + ".idx", "rb").read()
    put("idx", idx)
    entries = read_idx_offsets(repo_pack[:-5] + ".idx")
    v1 = b"".join(struct.pack(">I", sum(1 for i, _ in entries if i[0] <= b)) for b in range(256))
    v1 += b"".join(struct.pack(">I", o) + i for i, o in entries) + idx[-40:]
    put("idx", v1)

    # pack: the repository's pack, fixture packs up to 64 KiB, and a REF_DELTA chain on fake ids.
    packs = [repo_pack]
    if fixtures:
        for root, _, files in os.walk(fixtures):
            packs += [os.path.join(root, f) for f in files if f.endswith(".pack")]
    for p in packs:
        if os.path.getsize(p) <= 64 << 10:
            put("pack", pack_seed(p))
    fake = lambda i: bytes([i]) + bytes(19)
    base = b"hello world\n" * 4
    d1 = bytes([len(base), 13, 0x91, 6, 5, 8]) + b", hello!"
    put("pack", crafted_pack([(3, base, None), (7, d1, fake(0)), (7, bytes([13, 5, 0x90, 5]), fake(1))]))

    # delta: base and delta pairs from the packs, and the unit test's sample.
    for p in packs[:8]:
        for seed in delta_seeds(p)[:20]:
            put("delta", seed)
    put("delta", struct.pack("<H", 11) + b"hello world" + bytes([11, 13, 0x91, 6, 5, 2]) + b", " + bytes([0x90, 5, 1]) + b"!")

    # loose: the repository's loose objects, small fixture loose objects, and a few of each type.
    loose_files = []
    for root in [os.path.join(REPO, "objects")] + ([fixtures] if fixtures else []):
        for d, _, files in os.walk(root):
            if len(os.path.basename(d)) == 2 and "objects" in d:
                loose_files += [os.path.join(d, f) for f in files if len(f) == 38]
    for f in sorted(loose_files)[:40]:
        if os.path.getsize(f) <= 4096:
            put("loose", open(f, "rb").read())
    for obj in [b"blob 0\0", b"tree 0\0", b"commit 3\0abc", b"tag 1\0\n", b"blob 5\0hello"]:
        put("loose", zlib.compress(obj))

    # inflate_prefix: the repository's zlib streams and deflated samples.
    inflate_prefix_seeds(repo_pack)

    # session: streams that ask for the repository's objects in every way the grammar allows.
    ids = [line.split()[0] for line in open(os.path.join(REPO, "OBJECTS"))]
    kinds = {line.split()[0]: line.split()[1] for line in open(os.path.join(REPO, "OBJECTS"))}
    blobs = [i for i in ids if kinds[i] == "blob"]
    commit = next(i for i in ids if kinds[i] == "commit")
    tree = next(i for i in ids if kinds[i] == "tree")
    tag = next(i for i in ids if kinds[i] == "tag")
    s = lambda *lines: ("\n".join(lines) + "\n").encode()
    put("session", s(*("cat-blob " + b for b in blobs)))
    put("session", s("cat-blob " + blobs[0].upper(), "cat-blob " + "0" * 40, "cat-blob " + tree))
    put("session", s("feature done", "blob", "mark :1", "data 5", "hello", "cat-blob :1", "get-mark :1", "done"))
    put("session", s("blob", "mark :2", "original-oid 1234", "data <<EOF", "line one", "line two", "EOF", "cat-blob :2"))
    put("session", s("ls " + commit + " file.txt", "ls " + tree + " dir", "ls " + tag + " dir/nul.bin", "ls " + commit + " sub",
                     'ls ' + commit + ' "link"', "ls " + commit + " missing/path", "ls " + commit + " "))
    put("session", s("feature notes", "feature date-format=raw", "option git quiet", "option git depth=10",
                     "option other", "progress checking", "checkpoint", "# a comment", "cat-blob " + blobs[1]))
    put("session", s("blob", "mark :3", "data 3", "abc", "ls :3 x", "cat-blob :4"))
    put("session", s("feature import-marks=x", "cat-blob " + blobs[0]))
    put("session", s("commit refs/heads/main"))
    put("session", s("cat-blob " + blobs[2]) + b"cat-blob " + blobs[3].encode())
    put("session", b"blob\nmark :1\ndata 10\nshort")
    put("session", b"cat-blob \0" + blobs[0].encode() + b"\nls \"a\\001b\" c\n")
    put("session", open(os.path.join(HERE, "..", "fixtures", "expected", "basic-cat-blob.stream"), "rb").read())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a `git fast-import` stream of a history shaped like linux.git's (benches/linux-history.sh drives it).

Seeded and deterministic: the same arguments give the same stream, so the same object ids, on every machine.

The shape, scaled by the arguments:
- a deep tree of FILES text files in DIRS directories (linux: about 80k in 5k), a few wide top-level
  directories and most files three to six levels down;
- COMMITS commits on `refs/heads/master`, each changing 1-5 files (mean about 3.5) of one subsystem (a directory
  and its subtree), with the hottest files changed far more often than the rest (Zipf);
- topic branches of 2-12 commits forked from master and merged back with a merge commit (about 7% of commits are
  merges, as in linux);
- file contents in one of two regimes: `small` (blobs of a few KB) or `linux` (10-15 KB on average), lines drawn
  from a shared pool of C-like lines, each change editing 1-3 hunks of a few lines, so that files grow slowly.
Author, committer and dates are pinned.
"""
import argparse
import math
import random
import sys

REGIMES = {
    # median and spread of the lognormal size of a new file, in bytes, and the size cap
    "small": (2600, 0.75, 64 << 10),
    "linux": (8000, 0.85, 256 << 10),
}
TOP_DIRS = [b"arch", b"block", b"certs", b"crypto", b"Documentation", b"drivers", b"fs", b"include", b"init",
            b"ipc", b"kernel", b"lib", b"mm", b"net", b"samples", b"scripts", b"security", b"sound", b"tools",
            b"virt"]
WORDS = [b"int", b"struct", b"static", b"return", b"unsigned", b"const", b"void", b"if", b"else", b"for",
         b"while", b"goto", b"err", b"dev", b"priv", b"ret", b"len", b"buf", b"skb", b"page", b"lock", b"node",
         b"list", b"flags", b"size", b"count", b"offset", b"data", b"irq", b"reg", b"val", b"mask", b"state",
         b"queue", b"ops", b"ctx", b"info", b"desc", b"entry", b"table", b"map", b"pci", b"usb", b"net", b"clk"]
EPOCH = 1_100_000_000  # 2004-11-09, pinned


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--commits", type=int, required=True)
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--dirs", type=int, required=True)
    p.add_argument("--regime", choices=sorted(REGIMES), required=True)
    return p.parse_args()


class Pool:
    """A pool of C-like lines that every file draws from, and fresh lines for edits."""

    def __init__(self, rng, size):
        self.rng = rng
        self.lines = [self.fresh() for _ in range(size)]

    def fresh(self):
        rng = self.rng
        indent = b"\t" * rng.choice((0, 1, 1, 1, 2, 2, 3))
        words = b" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        return b"%s%s_%x(%s);\n" % (indent, rng.choice(WORDS), rng.getrandbits(20), words)

    def draw(self, count):
        return self.rng.choices(self.lines, k=count)


def make_dirs(rng, count):
    """Directory paths (bytes, no trailing slash), parents before children, mostly three to six levels deep."""
    dirs = list(TOP_DIRS[: min(len(TOP_DIRS), count)])
    depth = {d: 1 for d in dirs}
    # weights favour the middle depths, so that the tree is deep without being a chain
    level_weight = {1: 3.0, 2: 4.0, 3: 3.0, 4: 1.5, 5: 0.6, 6: 0.2}
    while len(dirs) < count:
        parent = dirs[rng.randrange(len(dirs))]
        if rng.random() * 4.0 > level_weight.get(depth[parent], 0.0):
            continue
        child = parent + b"/" + b"%s%d" % (rng.choice(WORDS), rng.randrange(1000))
        if child in depth:
            continue
        depth[child] = depth[parent] + 1
        dirs.append(child)
    return dirs


def make_files(rng, dirs, count):
    """File paths spread over the directories with a heavy tail (a few directories hold hundreds of files)."""
    weights = [rng.paretovariate(1.2) for _ in dirs]
    files, seen = [], set()
    exts = (b".c", b".c", b".c", b".h", b".h", b".S", b".txt", b".rst", b"")
    while len(files) < count:
        for d in rng.choices(dirs, weights=weights, k=count - len(files)):
            path = d + b"/" + b"%s_%s%d%s" % (rng.choice(WORDS), rng.choice(WORDS), rng.randrange(100),
                                               rng.choice(exts))
            if path not in seen:
                seen.add(path)
                files.append(path)
    files.sort()
    return files


class History:
    def __init__(self, args):
        self.rng = random.Random(args.seed)
        self.out = sys.stdout.buffer
        self.mark = 0
        self.when = EPOCH
        self.median, self.sigma, self.cap = REGIMES[args.regime]
        self.pool = Pool(self.rng, 50_000)
        dirs = make_dirs(self.rng, args.dirs)
        self.paths = make_files(self.rng, dirs, args.files)
        # subsystems: a directory and its files below it; hot files (Zipf by a shuffled rank) change most often
        self.by_dir = {}
        for i, path in enumerate(self.paths):
            parts = path.split(b"/")
            for k in range(1, len(parts)):
                self.by_dir.setdefault(b"/".join(parts[:k]), []).append(i)
        self.subsystems = [d for d, members in self.by_dir.items() if len(members) >= 2 and d.count(b"/") >= 1]
        heat = list(range(1, len(self.paths) + 1))
        self.rng.shuffle(heat)
        self.heat = [1.0 / rank for rank in heat]
        self.sub_weights = [sum(self.heat[i] for i in self.by_dir[d]) ** 0.5 for d in self.subsystems]
        self.content = [None] * len(self.paths)  # list of lines per file
        self.blob_mark = [0] * len(self.paths)

    def emit(self, *chunks):
        self.out.write(b"".join(chunks))

    def new_mark(self):
        self.mark += 1
        return self.mark

    def write_blob(self, index):
        data = b"".join(self.content[index])
        mark = self.new_mark()
        self.emit(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)), data, b"\n")
        self.blob_mark[index] = mark

    def new_file(self):
        size = min(self.cap, int(self.rng.lognormvariate(math.log(self.median), self.sigma)))
        return self.pool.draw(max(1, size // 40))

    def edit(self, lines):
        """1-3 hunks: replace, insert or delete a few lines; insertions slightly outnumber deletions."""
        rng, lines = self.rng, list(lines)
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            at = rng.randrange(len(lines) + 1)
            n = rng.randint(1, 6)
            kind = rng.random()
            if kind < 0.45 and at < len(lines):
                lines[at:at + n] = [self.pool.fresh() for _ in range(n)]
            elif kind < 0.8 or len(lines) <= n:
                lines[at:at] = [self.pool.fresh() for _ in range(n)]
            else:
                del lines[at:at + n]
        return lines if len(b"".join(lines)) <= self.cap else lines[: len(lines) // 2]

    def commit(self, ref, parents, changed, message):
        """Writes the blobs of `changed` (file indexes whose content is set), then the commit; returns its mark."""
        mark = self.new_mark()
        self.when += self.rng.randint(60, 3600)
        ident = b"A U Thor <author@example.com> %d +0000" % self.when
        msg = message + b"\n"
        head = [b"commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s" % (ref, mark, ident, ident, len(msg), msg)]
        if parents:
            head.append(b"from :%d\n" % parents[0])
            head.extend(b"merge :%d\n" % p for p in parents[1:])
        head.extend(b"M 100644 :%d %s\n" % (self.blob_mark[i], self.paths[i]) for i in changed)
        self.emit(*head, b"\n")
        return mark

    def pick_files(self, avoid):
        """1-5 files of one subsystem, weighted by heat, none of them in `avoid`."""
        rng = self.rng
        want = rng.choices((1, 2, 3, 4, 5), weights=(10, 15, 20, 25, 30))[0]
        while True:
            sub = rng.choices(self.subsystems, weights=self.sub_weights)[0]
            members = [i for i in self.by_dir[sub] if i not in avoid]
            if members:
                break
        weights = [self.heat[i] for i in members]
        picked = set()
        for _ in range(4):  # hot files come up again and again: draw until `want` differ, or give up
            picked.update(rng.choices(members, weights=weights, k=want - len(picked)))
            if len(picked) >= min(want, len(members)):
                break
        return sorted(picked)

    def change(self, files):
        for i in files:
            self.content[i] = self.edit(self.content[i])
            self.write_blob(i)

    def run(self, commits):
        for i in range(len(self.paths)):
            self.content[i] = self.new_file()
            self.write_blob(i)
        tip = self.commit(b"refs/heads/master", [], range(len(self.paths)), b"Initial import")
        made, topic = 1, 0
        while made < commits:
            if self.rng.random() < 0.07 and commits - made > 15:
                tip, n = self.topic(tip, topic)
                topic += 1
                made += n
                continue
            files = self.pick_files(())
            self.change(files)
            tip = self.commit(b"refs/heads/master", [tip], files, b"change %d" % made)
            made += 1
        self.emit(b"done\n")

    def topic(self, tip, number):
        """A branch of 2-12 commits forked from master while master moves on elsewhere, then merged."""
        rng = self.rng
        saved = {}
        ref = b"refs/heads/topic"
        self.emit(b"reset %s\nfrom :%d\n\n" % (ref, tip))
        branch_tip, touched = tip, set()
        branch_len = rng.randint(2, 12)
        for k in range(branch_len):
            files = self.pick_files(())
            for i in files:
                saved.setdefault(i, (self.content[i], self.blob_mark[i]))
            self.change(files)
            touched.update(files)
            branch_tip = self.commit(ref, [branch_tip], files, b"topic %d change %d" % (number, k))
        topic_state = {i: (self.content[i], self.blob_mark[i]) for i in touched}
        for i, (content, mark) in saved.items():  # master does not see the topic until the merge
            self.content[i], self.blob_mark[i] = content, mark
        made = branch_len + 1  # and the merge
        for k in range(rng.randint(0, 4)):
            files = self.pick_files(touched)
            self.change(files)
            tip = self.commit(b"refs/heads/master", [tip], files, b"mainline %d during topic %d" % (k, number))
            made += 1
        for i, (content, mark) in topic_state.items():
            self.content[i], self.blob_mark[i] = content, mark
        merge = self.commit(b"refs/heads/master", [tip, branch_tip], sorted(touched),
                            b"Merge branch 'topic-%d'" % number)
        return merge, made


def main():
    args = parse_args()
    out = sys.stdout.buffer
    out.write(b"feature done\n")
    History(args).run(args.commits)
    out.flush()


if __name__ == "__main__":
    main()

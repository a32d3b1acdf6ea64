#!/usr/bin/env python3
"""Writes the prose of data/*.tsv as POT entries, for po/update-pot.sh to add to po/gpudoctor.pot.

    po/tsv2pot.py OUT FILE:COLUMN[,COLUMN...] ...

The TSV stays the one source of truth (src/data/tsv2c.c makes C of it, the rules pass a cell
through _() for people): each distinct text of the named columns becomes one msgid, located in
its file and commented with the column and the rows (by the first column, "xid 13") that hold it,
so a translator can find it. Read as tsv2c reads it: '#' lines are comments, the first other
line names the columns, cells are separated by tabs; empty cells and '-' are not text.
"""
import sys


def ranges(keys):
    """'1-4, 6' for the row keys 1 2 3 4 6 (numbers in runs, other keys as they are)."""
    out, run = [], []
    for k in keys + [None]:
        if k is not None and k.isdigit() and run and int(k) == int(run[-1]) + 1:
            run.append(k)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else "%s-%s" % (run[0], run[-1]))
        run = [k] if k is not None else []
    return ", ".join(out)


def quote(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def main(argv):
    out, specs = argv[1], argv[2:]
    entries = {}  # text -> {(file, column, key column): [keys]}, in order of first appearance
    for spec in specs:
        path, _, cols = spec.partition(":")
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
        header = lines[0].split("\t")
        for col in cols.split(","):
            if col not in header:
                sys.exit("%s: no column '%s'" % (path, col))
        for line in lines[1:]:
            cells = line.split("\t")
            for col in cols.split(","):
                text = cells[header.index(col)]
                if text in ("", "-"):
                    continue
                where = entries.setdefault(text, {}).setdefault((path, col, header[0]), [])
                if cells[0] not in where:
                    where.append(cells[0])
    with open(out, "w", encoding="utf-8") as f:
        f.write('msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n')
        for text, where in entries.items():
            f.write("\n")
            for (path, col, key), keys in where.items():
                f.write("#. %s, %s of %s %s\n" % (path, col, key, ranges(keys)))
            f.write("#: %s\n" % " ".join(sorted({w[0] for w in where})))
            f.write("msgid %s\nmsgstr \"\"\n" % quote(text))


if __name__ == "__main__":
    main(sys.argv)

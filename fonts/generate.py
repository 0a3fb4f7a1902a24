#!/usr/bin/env python3
"""Builds the snapcompact font sources and compiled glyph tables.

Two steps, both deterministic:

  python3 fonts/generate.py import    # Debian/PyPI packages -> fonts/*.bdf, fonts/unscii-8.hex
  python3 fonts/generate.py compile   # fonts/*.bdf|hex -> fonts/compiled/*.glyphs
                                      # /usr/share/unifont/unifont.hex -> fonts/compiled/unifont.cxfb
                                      # /usr/share/unicode/*  -> src/render/text/unicode_tables.rs

`import` needs the Debian packages `xfonts-base` and `pcf2bdf`, and the PyPI wheel of
`unscii` 0.1.1 (pass its path with --unscii-wheel). `compile` needs Debian `unifont` and
`unicode-data` for the Unifont asset and the Unicode tables. See fonts/README.md for the
provenance and licences of every input, and for the formats written here.
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FONTS = os.path.join(ROOT, "fonts")
COMPILED = os.path.join(FONTS, "compiled")
UNICODE_RS = os.path.join(ROOT, "src", "snapcompact", "unicode_tables.rs")

X11_MISC = "/usr/share/fonts/X11/misc"
UNIFONT_HEX = "/usr/share/unifont/unifont.hex"
UCD = "/usr/share/unicode"

# Our edit of the digit zero (spec README "snapcompact fonts", spec snapcompact 7.2): rows
# of the glyph box, top first, replacing the whole bitmap. Read off the reference frames.
ZERO_EDITS = {
    "8x13": ["00", "00", "18", "24", "42", "4A", "52", "62", "42", "24", "18", "00", "00"],
    "6x12": ["00", "00", "00", "30", "48", "48", "78", "48", "48", "30", "00", "00"],
    "5x8": ["00", "20", "50", "70", "50", "50", "20", "00"],
}
ZERO_COMMENT = "ctxfold edit: digit zero given a slash (8x13) or a centre bar (6x12, 5x8)"

# Which code points of each source ship in the core. 6x12 and 8x13 ship whole; 5x8 ships the
# ASCII + Latin-1 repertoire the reference renderer had (191 glyphs), so exactly the same
# characters reach the fallback font as in the reference frames.
def keep_5x8(cp):
    return 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF


FONT_SUBSETS = {"5x8": keep_5x8, "6x12": None, "8x13": None}


# --------------------------------------------------------------------------------------------
# import


def import_bdf(name):
    src = os.path.join(X11_MISC, name + ".pcf.gz")
    with tempfile.TemporaryDirectory() as tmp:
        pcf = os.path.join(tmp, name + ".pcf")
        with gzip.open(src, "rb") as f, open(pcf, "wb") as out:
            out.write(f.read())
        bdf = subprocess.run(["pcf2bdf", pcf], check=True, capture_output=True).stdout.decode(
            "latin-1"
        )
    lines = bdf.split("\n")
    out = []
    in_zero = False
    bitmap = False
    edited = False
    for line in lines:
        if line.startswith("STARTFONT"):
            out.append(line)
            out.append("COMMENT " + ZERO_COMMENT)
            continue
        if line == "ENCODING 48":
            in_zero = True
        if in_zero and line == "BITMAP":
            out.append(line)
            out.extend(ZERO_EDITS[name])
            bitmap = True
            continue
        if bitmap:
            if line == "ENDCHAR":
                bitmap = False
                in_zero = False
                edited = True
                out.append(line)
            continue
        out.append(line)
    if not edited:
        sys.exit(f"{name}: no zero glyph found")
    path = os.path.join(FONTS, name + ".bdf")
    with open(path, "w", encoding="latin-1", newline="\n") as f:
        f.write("\n".join(out))
    print(f"wrote {path}")


def import_unscii(wheel):
    with zipfile.ZipFile(wheel) as z:
        src = z.read("unscii/raw_unscii/unscii_8.py").decode("utf-8")
    # The module is one dict literal `unscii_8_bytes = {cp: [row, ...], ...}`; read it as data.
    table = {}
    for m in re.finditer(r"(\d+):\s*\[([0-9,\s]+)\]", src):
        rows = [int(v) for v in m.group(2).split(",") if v.strip()]
        table[int(m.group(1))] = rows
    path = os.path.join(FONTS, "unscii-8.hex")
    with open(path, "w", newline="\n") as f:
        for cp in range(0x01, 0x100):
            rows = table.get(cp)
            if rows is None or len(rows) != 8:
                sys.exit(f"unscii-8: code point {cp:04X} missing or not 8 rows")
            f.write("%04X:%s\n" % (cp, "".join("%02X" % r for r in rows)))
    print(f"wrote {path}")


# --------------------------------------------------------------------------------------------
# compile: bitmap fonts


def parse_bdf(path):
    with open(path, encoding="latin-1") as f:
        lines = f.read().split("\n")
    ascent = None
    glyphs = {}
    i = 0
    cell = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("FONT_ASCENT "):
            ascent = int(line.split()[1])
        elif line.startswith("FONTBOUNDINGBOX "):
            w, h, _, _ = (int(v) for v in line.split()[1:5])
            cell = (w, h)
        elif line.startswith("STARTCHAR"):
            enc = None
            bbx = None
            rows = []
            i += 1
            while lines[i] != "ENDCHAR":
                l = lines[i]
                if l.startswith("ENCODING "):
                    enc = int(l.split()[1])
                elif l.startswith("BBX "):
                    bbx = tuple(int(v) for v in l.split()[1:5])
                elif l == "BITMAP":
                    i += 1
                    while lines[i] != "ENDCHAR":
                        rows.append(int(lines[i], 16))
                        i += 1
                    break
                i += 1
            if enc is not None and enc >= 0:
                glyphs[enc] = (bbx, rows)
        i += 1
    return ascent, cell, glyphs


def cell_rows(ascent, cell, bbx, rows):
    """Places a BDF glyph bitmap into full-cell rows (top row first, bit 7 = leftmost)."""
    cw, ch = cell
    w, h, xoff, yoff = bbx
    out = [0] * ch
    top = ascent - h - yoff
    for r, bits in enumerate(rows):
        y = top + r
        if not 0 <= y < ch:
            continue
        # BDF rows are padded to whole bytes; one byte for every glyph of these fonts.
        nbytes = (w + 7) // 8
        v = bits << (8 * (1 - nbytes)) if nbytes <= 1 else bits >> (8 * (nbytes - 1))
        if xoff > 0:
            v >>= xoff
        elif xoff < 0:
            v = (v << -xoff) & 0xFF
        out[y] = v & 0xFF
    return out


# Glyph rows are stored plain (format "CXGL" version 3, see fonts/README.md), one byte per row,
# so that the library draws from the embedded table as it is. Version 2 range-coded them
# (30.0 KB against 36 KB as gzip -9 of the plain rows), which cost the first frame of every
# fresh process a decode of the rows, about 40 ms of wasm: a cold edge worker paid it on its first
# request (fonts/README.md, "Formats").


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def write_glyphs(name, cell, ascent, glyphs):
    """Compiled table: see fonts/README.md ("compiled glyph tables")."""
    cps = sorted(glyphs)
    runs = []
    for cp in cps:
        if runs and runs[-1][0] + runs[-1][1] == cp and runs[-1][1] < 0xFFFF:
            runs[-1][1] += 1
        else:
            runs.append([cp, 1])
    cw, ch = cell
    rows = [list(glyphs[cp]) for cp in cps]
    if any(r & (0xFF >> cw) for g in rows for r in g):
        sys.exit(f"{name}: a glyph has ink right of the {cw} px cell")
    plain = bytes(b for g in rows for b in g)
    out = bytearray(b"CXGL")
    out += bytes([3, cw, ch, ascent])
    out += len(runs).to_bytes(2, "little") + len(cps).to_bytes(2, "little")
    run_table = bytearray()
    for start, n in runs:
        run_table += start.to_bytes(4, "little") + n.to_bytes(2, "little")
    # FNV-1a of the 12 header bytes before it, the run table and the rows.
    out += fnv1a(bytes(out) + run_table + plain).to_bytes(4, "little")
    out += run_table
    out += plain
    os.makedirs(COMPILED, exist_ok=True)
    path = os.path.join(COMPILED, name + ".glyphs")
    with open(path, "wb") as f:
        f.write(out)
    gz = len(gzip.compress(plain, 9))
    print(
        f"wrote {path}: {len(cps)} glyphs, {len(runs)} runs, {len(out)} B "
        f"({len(plain)} B of rows, {gz} B as gzip -9)"
    )


def compile_bdf(name):
    ascent, cell, glyphs = parse_bdf(os.path.join(FONTS, name + ".bdf"))
    keep = FONT_SUBSETS[name]
    table = {}
    for cp, (bbx, rows) in glyphs.items():
        if keep is not None and not keep(cp):
            continue
        if bbx[0] > 8:
            sys.exit(f"{name}: glyph {cp:04X} wider than 8 px")
        table[cp] = cell_rows(ascent, cell, bbx, rows)
    write_glyphs(name, cell, ascent, table)


def compile_unscii():
    table = {}
    with open(os.path.join(FONTS, "unscii-8.hex")) as f:
        for line in f:
            cp, _, bits = line.strip().partition(":")
            if len(bits) != 16:
                continue
            table[int(cp, 16)] = [int(bits[i : i + 2], 16) for i in range(0, 16, 2)]
    # unscii-8: 8x8, top row on the cell top (ascent 7, yoff -1), spec snapcompact 7.2.
    write_glyphs("8x8", (8, 8), 7, table)


def compile_unifont():
    """Optional fallback asset (format "CXFB", see fonts/README.md)."""
    glyphs = []
    with open(UNIFONT_HEX) as f:
        for line in f:
            cp, _, bits = line.strip().partition(":")
            cp = int(cp, 16)
            if len(bits) == 32:
                width = 8
            elif len(bits) == 64:
                width = 16
            else:
                continue
            glyphs.append((cp, width, bytes.fromhex(bits)))
    glyphs.sort()
    runs = []
    data = bytearray()
    for cp, width, bits in glyphs:
        last = runs[-1] if runs else None
        if last and last[0] + last[1] == cp and last[2] == width and last[1] < 0xFFFF:
            last[1] += 1
        else:
            runs.append([cp, 1, width, len(data)])
        data += bits
    out = bytearray(b"CXFB")
    out += bytes([1, 16, 14, 0])  # version, glyph height, ascent (baseline row), reserved
    out += len(runs).to_bytes(4, "little")
    for start, n, width, off in runs:
        out += start.to_bytes(4, "little") + n.to_bytes(2, "little")
        out += bytes([width, 0]) + off.to_bytes(4, "little")
    out += data
    path = os.path.join(COMPILED, "unifont.cxfb")
    with open(path, "wb") as f:
        f.write(out)
    gz = len(gzip.compress(bytes(out), 9))
    print(f"wrote {path}: {len(glyphs)} glyphs, {len(runs)} runs, {len(out)} B, {gz} B gzipped")


# --------------------------------------------------------------------------------------------
# compile: Unicode tables


def ucd_lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield line


def unicode_data():
    """code point -> (category, decomposition string) from UnicodeData.txt, ranges expanded."""
    cats = {}
    decomp = {}
    first = None
    for line in ucd_lines(os.path.join(UCD, "UnicodeData.txt")):
        f = line.split(";")
        cp = int(f[0], 16)
        if f[1].endswith(", First>"):
            first = cp
            continue
        if f[1].endswith(", Last>"):
            for c in range(first, cp + 1):
                cats[c] = f[2]
            continue
        cats[cp] = f[2]
        if f[5]:
            parts = f[5].split()
            if parts[0].startswith("<"):
                parts = parts[1:]
            decomp[cp] = [int(p, 16) for p in parts]
    return cats, decomp


def ranges_of(cps):
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] + 1 == cp:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def full_nfkd(cp, decomp):
    if cp in decomp:
        res = []
        for p in decomp[cp]:
            res.extend(full_nfkd(p, decomp))
        return res
    return [cp]


# Punctuation fold of spec snapcompact 6.5 (kept in sync with normalize.rs by a test).
PUNCT_FOLD = {}
for c in (0x2018, 0x2019, 0x201A, 0x201B, 0x2032, 0x2035):
    PUNCT_FOLD[c] = "'"
for c in (0x201C, 0x201D, 0x201E, 0x2033, 0x2036):
    PUNCT_FOLD[c] = '"'
PUNCT_FOLD.update({0x2039: "<", 0x203A: ">", 0x2212: "-", 0x2044: "/", 0x2024: ".", 0x2025: ".."})
for c in range(0x2010, 0x2016):
    PUNCT_FOLD[c] = "-"
for c in (0x2026, 0x22EF):
    PUNCT_FOLD[c] = "..."
for c in (0x2022, 0x2023, 0x2219, 0x25CF, 0x25A0, 0x25AA):
    PUNCT_FOLD[c] = "*"
PUNCT_FOLD.update(
    {
        0x2043: "-",
        0x2190: "<-",
        0x2191: "^",
        0x2192: "->",
        0x2193: "v",
        0x2194: "<->",
        0x21D0: "<=",
        0x21D2: "=>",
        0x21D4: "<=>",
        0x2713: "v",
        0x2714: "v",
        0x2717: "x",
        0x2718: "x",
    }
)


def latin(cp):
    return 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF


def compile_unicode():
    cats, decomp = unicode_data()
    marks_all = {c for c, k in cats.items() if k in ("Mn", "Mc", "Me")}
    # NFKD fold (spec snapcompact 6.4 step 4.7): decompose, delete every combining mark; keep
    # the result when it differs from the input and every piece is ASCII/Latin-1 or folds by
    # the punctuation table (which is then applied).
    folds = {}
    for cp in sorted(decomp):
        pieces = [p for p in full_nfkd(cp, decomp) if p not in marks_all]
        if pieces == [cp]:
            continue
        if not all(latin(p) or p in PUNCT_FOLD for p in pieces):
            continue
        folds[cp] = "".join(PUNCT_FOLD.get(p, chr(p)) for p in pieces)
    ext_pict = set()
    for line in ucd_lines(os.path.join(UCD, "emoji", "emoji-data.txt")):
        rng, prop = (s.strip() for s in line.split(";"))
        if prop != "Extended_Pictographic":
            continue
        a, _, b = rng.partition("..")
        for c in range(int(a, 16), int(b or a, 16) + 1):
            ext_pict.add(c)
    fmt = {c for c, k in cats.items() if k == "Cf"}
    drop = {c for c, k in cats.items() if k in ("Cc", "Mn", "Me", "Cs")}

    def table(name, cps, doc):
        # (gap from the previous range's end + 1, last - first) per range, as LEB128 varints.
        blob = bytearray()
        after = 0
        for a, b in ranges_of(cps):
            blob += varint(a - after) + varint(b - a)
            after = b + 1
        return (
            f"/// {doc}\n/// Ranges (see `unicode::ranges`): {len(ranges_of(cps))}.\n"
            f"pub(crate) static {name}: &[u8] = {rust_bytes(blob)};\n"
        )

    # Runs of consecutive code points whose folds are consecutive single characters (the
    # mathematical alphanumerics, fullwidth forms, ...) are stored once: first code point
    # (gap from the previous run's end + 1), run length, fold length, fold (Latin-1 bytes).
    runs = []
    for cp in sorted(folds):
        f = folds[cp]
        if runs:
            c0, f0, n = runs[-1]
            if cp == c0 + n and len(f) == 1 and len(f0) == 1 and ord(f) == ord(f0) + n:
                runs[-1] = (c0, f0, n + 1)
                continue
        runs.append((cp, f, 1))
    fold_blob = bytearray()
    after = 0
    for c0, f, n in runs:
        fb = f.encode("latin-1")
        fold_blob += varint(c0 - after) + varint(n) + bytes([len(fb)]) + fb
        after = c0 + n
    version = "unknown"
    with open(os.path.join(UCD, "ReadMe.txt"), encoding="utf-8") as f:
        m = re.search(r"Version (\d+\.\d+\.\d+)", f.read())
        if m:
            version = m.group(1)
    src = (
        "// @generated by fonts/generate.py from the Unicode Character Database "
        + version
        + " (Debian `unicode-data`).\n// Do not edit by hand: rerun `python3 fonts/generate.py compile`.\n"
        + "//! Unicode property tables used by normalization (spec: snapcompact §6.4), packed as\n"
        + "//! LEB128 byte strings that `unicode.rs` expands on first use (a table of `(u32, u32)`\n"
        + "//! pairs or of `(u32, &str)` would take four to six times the bytes in the module).\n\n"
        + table("FORMAT", fmt, "General category Cf (format characters).")
        + "\n"
        + table(
            "DROPPED",
            drop,
            "General categories Cc, Mn, Me and Cs: dropped when nothing else applies (§6.4 step 4.9).",
        )
        + "\n"
        + table("EXTENDED_PICTOGRAPHIC", ext_pict, "Emoji property Extended_Pictographic.")
        + "\n/// NFKD folds to ASCII/Latin-1 with combining marks removed and the punctuation fold\n"
        + f"/// applied (§6.4 step 4.7), by code point (see `unicode::folds`): {len(folds)} folds in\n"
        + f"/// {len(runs)} runs.\n"
        + f"pub(crate) static NFKD_FOLD: &[u8] = {rust_bytes(fold_blob)};\n"
    )
    with open(UNICODE_RS, "w", encoding="utf-8", newline="\n") as f:
        f.write(src)
    print(f"wrote {UNICODE_RS}: {len(folds)} folds, {len(ranges_of(ext_pict))} pictographic ranges")


def varint(n):
    """LEB128: 7 bits per byte, low bits first, high bit set on all but the last byte."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def rust_bytes(blob):
    """A Rust byte-string literal, split into lines with `\\` continuations."""
    lines, line = [], ""
    for b in blob:
        if b in (0x22, 0x5C):
            piece = "\\" + chr(b)
        elif 0x20 <= b <= 0x7E and not (b == 0x20 and not line):
            piece = chr(b)
        else:
            piece = "\\x%02x" % b
        if len(line) + len(piece) > 90:
            lines.append(line)
            line = ""
            if b == 0x20:
                piece = "\\x20"
        line += piece
    lines.append(line)
    return 'b"\\\n    ' + "\\\n    ".join(lines) + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("step", choices=["import", "compile"])
    ap.add_argument("--unscii-wheel", help="path of unscii-0.1.1-py3-none-any.whl (import step)")
    args = ap.parse_args()
    if args.step == "import":
        for name in ("5x8", "6x12", "8x13"):
            import_bdf(name)
        if not args.unscii_wheel:
            sys.exit("import: pass --unscii-wheel (pip download --no-deps unscii==0.1.1)")
        import_unscii(args.unscii_wheel)
    else:
        for name in ("5x8", "6x12", "8x13"):
            compile_bdf(name)
        compile_unscii()
        compile_unifont()
        compile_unicode()


if __name__ == "__main__":
    main()

"""Mutants of the lightweight encodings (format 2: :mod:`hfq.storage.bitpack`,
:mod:`hfq.storage.light`): plausible bugs at block edges, in exceptions and patches, in signs
and in the lane layout, each killed by the fast deterministic edge test and the fuzz."""

from __future__ import annotations

from mutants import Mutant

EDGES = "tests/unit/test_encodings_fuzz.py::test_planted_edges_decode_exactly"
FUZZ = "tests/unit/test_encodings_fuzz.py::test_every_encoding_gives_back_every_column"
BITPACK = "hfq/storage/bitpack.py"
LIGHT = "hfq/storage/light.py"

MUTANTS: list[Mutant] = [
    Mutant("encoding-exception-next-block", "encoding", BITPACK,
           "while e < k and exc_pos[e] < lo + m:", "while e < k and exc_pos[e] <= lo + m:",
           "an exception at the first row of the next block patched into this one: an "
           "off-by-one at a 1,024 boundary", (EDGES,)),
    Mutant("encoding-block-shorter", "encoding", BITPACK,
           "        m = min(BLOCK, n - lo)\n        w = np.int64(widths[q])",
           "        m = min(BLOCK - 1, n - lo)\n        w = np.int64(widths[q])",
           "the last value of every full block not decoded", (EDGES,)),
    Mutant("encoding-exception-misapplied", "encoding", BITPACK,
           "            tmp[exc_pos[e] - lo] = exc_val[e]\n",
           "            tmp[exc_pos[e] - lo] = exc_val[e] - ref\n",
           "an exception stored whole but decoded as an offset from the block's reference",
           (EDGES,)),
    Mutant("encoding-lane-carry", "encoding", BITPACK,
           "(np.int64(word[base + lanes + lane]) << (32 - s))",
           "(np.int64(word[base + lanes + lane]) << (31 - s))",
           "a value straddling two words of its lane joined at the wrong bit", (EDGES,)),
    Mutant("encoding-delta-base", "encoding", LIGHT,
           "base = int(stream[lo]) if mode == DELTA and n else 0",
           "base = int(stream[lo]) if mode == DELTA and n > 1 else 0",
           "a one-row batch of a delta column decoded from 0", (EDGES, FUZZ)),
    Mutant("encoding-sign-of-zero", "encoding", LIGHT,
           "good = back == v and (back != 0.0 or np.signbit(back) == np.signbit(v))",
           "good = back == v",
           "-0.0 taken for a decimal 0 and decoded as +0.0: a sign lost", (EDGES,)),
    Mutant("encoding-patches-shuffled", "encoding", LIGHT,
           "out[at:at + n].view(np.int64)[patch_rows] = patch_values.view(np.int64)",
           "out[at:at + n].view(np.int64)[patch_rows[::-1]] = patch_values.view(np.int64)",
           "the patch list applied to the wrong rows", (EDGES,)),
    Mutant("encoding-validity-bit-order", "encoding", LIGHT,
           'bits = np.unpackbits(b[pos:pos + size], count=n, bitorder="little")',
           'bits = np.unpackbits(b[pos:pos + size], count=n, bitorder="big")',
           "a batch's validity bitmap read in the wrong bit order", (EDGES,)),
    Mutant("encoding-numpy-lane-carry", "encoding", BITPACK,
           "                x |= lanes[:, kk + 1, :] << (32 - s)\n",
           "                x |= lanes[:, kk + 1, :] << (31 - s)\n",
           "numpy's decoder joins a value straddling two words of its lane at the wrong bit",
           (EDGES, FUZZ)),
    Mutant("encoding-numpy-short-block-spill", "encoding", BITPACK,
           "            off[whole * BLOCK:] = ((low >> s) | spill) & ((1 << w) - 1)\n",
           "            off[whole * BLOCK:] = (low >> s) & ((1 << w) - 1)\n",
           "numpy's decoder drops the high bits of a short last block's value that straddles "
           "two words", (EDGES, FUZZ)),
    Mutant("encoding-numpy-exceptions-lost", "encoding", BITPACK,
           "        vals[exc_pos[keep].astype(np.int64)] = exc_val[keep]\n",
           "        vals[exc_pos[keep].astype(np.int64)[1:]] = exc_val[keep][1:]\n",
           "numpy's decoder loses a batch's first exception", (EDGES, FUZZ)),
    Mutant("encoding-numpy-wide-halves", "encoding", BITPACK,
           "            full_off[sel] = pairs[:, :, 0] | (pairs[:, :, 1] << 32)\n",
           "            full_off[sel] = pairs[:, :, 1] | (pairs[:, :, 0] << 32)\n",
           "numpy's decoder swaps the halves of a full block stored as 64-bit offsets",
           (EDGES, FUZZ)),
    Mutant("encoding-numpy-never", "encoding", LIGHT,
           "        return bitpack.decode_stream_numpy\n",
           "        return decode_stream\n",
           "a fresh process's small read loads numba (0.5 s) instead of decoding in numpy",
           ("tests/unit/test_lazy_numba.py::"
            "test_a_process_that_reads_a_little_decodes_in_numpy_then_in_numba",)),
    Mutant("encoding-numpy-forever", "encoding", LIGHT,
           "    if isinstance(decode_stream, Kernel) and decode_stream.dispatcher is None and \\\n"
           "            n <= _numpy_left:\n",
           "    if isinstance(decode_stream, Kernel) and decode_stream.dispatcher is None:\n",
           "a process never leaves numpy's decoder, however much it reads (50x numba's time)",
           ("tests/unit/test_lazy_numba.py::"
            "test_a_process_that_reads_a_little_decodes_in_numpy_then_in_numba",)),
]

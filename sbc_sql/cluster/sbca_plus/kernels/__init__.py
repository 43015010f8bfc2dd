"""numba kernels of SBCA+ (see :mod:`sbc_sql.cluster.sbca_plus.algorithm`), one module per concern.

:mod:`.costs` NCP of one QI of a class (shared with k-member), :mod:`.similarity` SBC's
distances, :mod:`.select` the m smallest entries, :mod:`.grow` a class grown row by row,
:mod:`.chunks` the bounds over chunks of rows that let the growth from every remaining row
and the next seed's search skip rows, :mod:`.greedy` the greedy pass, :mod:`.refine`
leftovers and refinement (on the classes of :mod:`.classes`, placing rows by
:mod:`.leftovers`, with the label counts of :mod:`.target`), :mod:`.order` Hilbert keys,
:mod:`.criteria` the privacy criteria of one class (each criterion's own module
``criterion_<name>.py``, found by :func:`criterion_codes`) and :mod:`.repair` a class grown
on until it keeps them. The Python side calls the three entry kernels
(``greedy.greedy_pass``, ``refine.finish``, ``order.hilbert_keys``) through
:mod:`..compiled`, with the arguments :mod:`..args` declares; ``pip install`` compiles them
ahead of time (:mod:`..aot`), so this folder imports only the standard library, numpy, numba
and itself, never the rest of the package.

Every kernel works in the *sorted domain*: row i is the i-th row of the row order SBCA+
takes (``blocks.coarse_order`` by default, ``QIData.sort_order()`` for the paper's order:
every categorical by ascending cardinality, then the numerics), so a tie broken by the
smaller index is a tie broken by position in that order, as the paper breaks ties.
Arrays are columnar: ``raw[j, i]`` is numeric QI j of row i in its own units (NaN for NULL),
``sc[j, i]`` the same divided by the QI's range (``QIData.scaled``, for SBC's distances),
``span[j]`` that range (0 when constant), ``cat[q, i]`` the code of categorical QI q, the
categorical QIs in SBC's order (ascending cardinality). ``wn``/``wc`` are the QI weights,
``num_act``/``cat_act`` mark the QIs that can cost anything (weight not 0; for a
categorical QI also more than one category).

The information loss of a class G is ``|G| * sum_q w_q NCP_q(G)`` (:mod:`.costs`): the
kernels keep, per class, the numeric bounds and NULL counts and the categorical distinct
counts, from which the effect of one row is O(d).

Cost per class of the greedy pass: O(remaining rows * d) for SBC's distances and the pick
of the wide set, O(wide * d * log k) for the pool refills and O(pool * k) for the growth
(plus O(pool) per value entering the class). When the pool holds every remaining row (block
mode's blocks at k <= 12), the growth and the next seed read the chunks' bounds instead:
O(remaining rows / 16 * d) per class, O(k * d) per chunk whose bound does not rule it out,
and SBC's distances only for rows of equal cost. Refinement: O(rows * window * d) per pass, for
the rows whose class is cheaper without them.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

#: the package's own name; the ahead-of-time build loads a private copy under another name,
#: with numba's cache in a scratch folder
_NAME = "sbc_sql.cluster.sbca_plus.kernels"
#: how a privacy criterion's kernel module (its compiled twin, see :mod:`.criteria`) is named
CRITERION_MODULES = "criterion_*.py"


@functools.cache
def criterion_codes() -> dict[str, int]:
    """Each criterion's kernel module in this folder and its code in a kernel program: 1, 2,
    ... in the modules' name order. The program's writer (``Rule.kernel_arrays``) and the
    kernels' dispatch (:mod:`.criteria`) both read it from the same files, which the
    fingerprint of the ahead-of-time module covers."""
    here = Path(__file__).resolve().parent
    stems = sorted(p.stem for p in here.glob(CRITERION_MODULES))
    return {stem: code for code, stem in enumerate(stems, start=1)}


def _source_digest() -> str:
    """A hash of every file of this folder."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale_cache(cache: Path, pattern: str = "*.nb[ic]", stamp: str = "numba-source.sha256") -> None:
    """Drop numba's cache files ``pattern`` in the folder ``cache`` when any file of this
    folder changed since they were written.

    numba keys a cached kernel on its own file only, but kernels here call and inline
    kernels of sibling files (and k-member's kernel these): after an edit to costs.py the
    cached greedy_pass would still hold the old costs, and after a criterion's module is
    added the criteria's codes differ. A stamp of the folder's source, kept beside the
    cache, catches that. Best effort: a read-only folder (an installed copy, which runs the
    ahead-of-time module) keeps its cache as it is.
    """
    digest = _source_digest()
    path = cache / stamp
    try:
        if path.read_text(encoding="ascii") == digest:
            return
    except OSError:
        pass
    try:
        for stale in cache.glob(pattern):
            stale.unlink()
        cache.mkdir(exist_ok=True)
        path.write_text(digest, encoding="ascii")
    except OSError:
        pass


if __name__ == _NAME:
    drop_stale_cache(Path(__file__).resolve().parent / "__pycache__")

"""How much stricter than the SQL verification the kernels check the privacy criteria.

The same margins as :mod:`sbc_sql.cluster.sensitive` (this folder imports nothing of the
package; a test checks that they agree).
"""

#: shares, distances and gains: a class the kernels accept never fails verification by rounding
MARGIN = 1e-9
#: entropy l-diversity: a class of exactly l equally frequent values passes
ENTROPY_TIE = 1e-13

/* SPDX-License-Identifier: MIT */
/*
 * "Did you mean": the known name nearest to a misspelt one, for the
 * messages that refuse an unknown key of the service file, an unknown
 * option of <Plugin metastable>, and any other list of names.  Included
 * by service.h; pure functions, no allocation.
 */
#ifndef METASTABLE_SUGGEST_H
#define METASTABLE_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest name ms_edit_distance compares, bytes; longer ones are
 * MS_EDIT_FAR from everything. */
#define MS_EDIT_MAX_LEN 1024
/* The distance of names that are too long to compare. */
#define MS_EDIT_FAR ((size_t)-1)

/*
 * ms_edit_distance: the optimal string alignment distance between a and b
 * (the fewest insertions, deletions, substitutions and swaps of two
 * adjacent bytes that turn one into the other, no byte edited twice:
 * Levenshtein 1966 with the transpositions of Damerau 1964), in bytes,
 * ASCII letters compared without case when nocase.  0 for equal names
 * (equal but for case with nocase).
 *   a, b  NUL-terminated; NULL is the empty name
 * Returns the distance, or MS_EDIT_FAR when either name is longer than
 * MS_EDIT_MAX_LEN bytes.
 */
size_t ms_edit_distance(const char *a, const char *b, bool nocase);

/*
 * ms_suggest: the candidate nearest to word by ms_edit_distance, when it
 * is near enough to be what was meant: at most max(1, strlen(word) / 3)
 * edits ("ServicFile" -> "ServiceFile", "timout" -> "timeout",
 * "Timeout" -> "timeout"; "colour" nowhere near "name" or "model").  The
 * first of equally near candidates wins, so the order of the list breaks
 * ties.  A candidate equal to word (case included) is never suggested:
 * the caller asks only about names it did not find.
 *   word        the name not found; NULL or "" gives NULL
 *   candidates  n names (NULL entries are skipped)
 *   nocase      compare ASCII letters without case (collectd's options)
 * Returns one of the candidates, or NULL when none is near enough.
 */
const char *ms_suggest(const char *word, const char *const *candidates,
                       size_t n, bool nocase);

#ifdef __cplusplus
}
#endif

#endif

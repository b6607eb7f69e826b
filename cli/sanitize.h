/* SPDX-License-Identifier: MIT */
/*
 * Text from the user (file contents, names, option values) made safe to
 * print on a terminal: the message printer of cli/common.c passes every
 * diagnostic through ms_cli_sanitize, so a trace of junk bytes cannot move
 * the cursor, change colours or ring the bell.
 */
#ifndef METASTABLE_CLI_SANITIZE_H
#define METASTABLE_CLI_SANITIZE_H

#include <stddef.h>

/*
 * ms_cli_sanitize: copy in to out (outlen bytes, NUL-terminated, cut at a
 * whole escape when it does not fit), escaping as \xNN (two lowercase hex
 * digits) every byte that is a C0 control (0x00-0x1f, tab included), DEL
 * (0x7f), part of a C1 control (U+0080-U+009F in UTF-8) or not part of a
 * well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF); a backslash is kept as it is.  Valid UTF-8
 * text is copied unchanged.  Returns the length written.
 */
size_t ms_cli_sanitize(char *out, size_t outlen, const char *in);

#endif

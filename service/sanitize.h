/* SPDX-License-Identifier: MIT */
/*
 * Text from the user (file contents, names, option values) made safe to
 * print on a terminal or to write into a log: the message printer of
 * cli/common.c passes every diagnostic through ms_sanitize, and so does
 * every line the plugin logs (plugin/metastable.c, ms_plugin_log), so that
 * a trace of junk bytes or an identifier with an escape sequence (ESC ] 0;
 * ... BEL retitles a terminal) cannot move the cursor, change colours or
 * ring the bell.  The one home of the escaping, shared by the command and
 * the plugin.
 */
#ifndef METASTABLE_SANITIZE_H
#define METASTABLE_SANITIZE_H

#include <stddef.h>

/*
 * ms_sanitize: copy in to out (outlen bytes, NUL-terminated, cut at a
 * whole escape when it does not fit), escaping as \xNN (two lowercase hex
 * digits) every byte that is a C0 control (0x00-0x1f, tab included), DEL
 * (0x7f), part of a C1 control (U+0080-U+009F in UTF-8) or not part of a
 * well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF); a backslash is kept as it is.  Valid UTF-8
 * text is copied unchanged.  Returns the length written.
 */
size_t ms_sanitize(char *out, size_t outlen, const char *in);

#endif

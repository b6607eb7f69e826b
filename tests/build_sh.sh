#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/build.sh's decision whether to run configure again, without
# building anything: a copy of the script in a scratch tree whose
# configure is a stand-in that records its arguments and writes a
# config.status answering --config as autoconf's does (the arguments,
# each one with a character the shell would read quoted in '...'), and a
# make that does nothing.  Asserted: the first run configures; the same
# arguments again do not; new arguments do, and the message says which;
# no arguments keep the configuration; arguments with blanks and quotes
# compare as themselves, in the form autoconf 2.71 prints them.
set -eu
top=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ms-build-sh-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/tree/scripts" "$scratch/bin"
cp "$top/scripts/build.sh" "$scratch/tree/scripts/build.sh"

# configure: count the runs, keep the arguments, answer --config as
# autoconf does (plain words bare, the others in '...', a ' as '\'')
cat >"$scratch/tree/configure" <<'EOF'
#!/bin/sh
echo x >>"$MS_FAKE_RUNS"
[ "${1:-}" = "-q" ] && shift
quoted=
for a in "$@"; do
  case $a in
  *[!A-Za-z0-9_=./:,+-]*)
    a="'$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'" ;;
  esac
  quoted="$quoted${quoted:+ }$a"
done
printf '#!/bin/sh\n[ "$1" = --config ] && cat <<"ARGS"\n%s\nARGS\n' \
  "$quoted" >config.status
chmod +x config.status
: >Makefile
EOF
chmod +x "$scratch/tree/configure"
printf '#!/bin/sh\nexit 0\n' >"$scratch/bin/make"
chmod +x "$scratch/bin/make"

export MS_FAKE_RUNS="$scratch/runs"
fail=0
runs() { [ -f "$MS_FAKE_RUNS" ] && wc -l <"$MS_FAKE_RUNS" | tr -d ' ' || echo 0; }
# build.sh DIR ARGS...: one run; want is the number of configure runs after
build() {
  want=$1
  shift
  PATH="$scratch/bin:$PATH" "$scratch/tree/scripts/build.sh" "$@" \
    2>"$scratch/err"
  got=$(runs)
  if [ "$got" != "$want" ]; then
    echo "FAIL: build.sh $*: configure ran $got times in all, not $want"
    cat "$scratch/err"
    fail=1
  fi
}

build 1 b --enable-werror
build 1 b --enable-werror
build 1 b
build 2 b --prefix=/usr
grep -q "b was configured with: --enable-werror" "$scratch/err" &&
  grep -q "configuring it again with: --prefix=/usr" "$scratch/err" ||
  { echo "FAIL: the message does not say what changed:"; cat "$scratch/err";
    fail=1; }
build 2 b --prefix=/usr
build 3 b --prefix=/usr --enable-werror
build 3 b --prefix=/usr --enable-werror
build 4 b --enable-werror --prefix=/usr # the order is configure's too
# blanks and quotes: the same arguments compare equal
build 5 b "CFLAGS=-O1 -g -fsanitize=address" "--with-x=it's"
build 5 b "CFLAGS=-O1 -g -fsanitize=address" "--with-x=it's"
build 6 b "CFLAGS=-O1 -g"
# what autoconf 2.71's config.status --config printed for these three
printf '#!/bin/sh\ncat <<"ARGS"\n%s\nARGS\n' \
  "'CFLAGS=-O1 -g' --enable-werror --with-x=it\\''s'" \
  >"$scratch/tree/b/config.status"
build 6 b "CFLAGS=-O1 -g" --enable-werror "--with-x=it's"
build 7 b "CFLAGS=-O1 -g" --enable-werror "--with-x=its"
# a directory without a Makefile is configured whatever it holds
rm "$scratch/tree/b/Makefile"
build 8 b "CFLAGS=-O1 -g" --enable-werror "--with-x=its"
build 9 other

[ $fail = 0 ] && echo "PASS: build.sh configures again exactly when the arguments change"
exit $fail

#!/usr/bin/env bash
# Shell completion in the real shells: the scripts of `gcluster completion bash|zsh|fish` are
# loaded into bash, zsh and fish, and each completes the same command lines: commands, flags,
# flag values (compute types, -o formats, --role) and file names.
#   tests/completion/test_completion.sh BUILD/gcluster
# bash is driven through its completion interface (complete -p, COMP_WORDS, COMPREPLY;
# bash_complete.sh), zsh through its line editor on a pseudo-terminal (zsh_complete.zsh), fish
# with `complete -C`.
# Offline: no cluster is configured, so no job names come back (the cluster tier tests those).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gcluster=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home" "$work/fpath" "$work/blueprints"
ln -s "$gcluster" "$work/bin/gcluster"
touch "$work/blueprints/bp-one.yaml" "$work/blueprints/bp-two.yaml"
export PATH="$work/bin:$PATH" HOME="$work/home" KUBECONFIG="$work/no-kubeconfig"
gcluster completion bash >"$work/gcluster.bash"
gcluster completion zsh >"$work/fpath/_gcluster"
gcluster completion fish >"$work/gcluster.fish"

bash_complete() {
    timeout 30 bash --norc --noprofile "$here/bash_complete.sh" "$work/gcluster.bash" "$1" | sort
}

zsh_complete() {
    timeout 60 zsh -f "$here/zsh_complete.zsh" "$work/fpath" "$1" | sort
}

fish_complete() {
    timeout 30 fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$work/gcluster.fish" "$1" |
        cut -f1 | sort
}

failures=0
# check SHELL LINE WANT...: the shell offers exactly WANT (in any order).
check() {
    local shell=$1 line=$2
    shift 2
    local got want
    got=$("${shell}_complete" "$line")
    want=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
    if [[ $got != "$want" ]]; then
        printf 'FAIL %s: "%s"\n  want: %s\n  got:  %s\n' "$shell" "$line" "$(echo $want)" "$(echo $got)" >&2
        failures=$((failures + 1))
    else
        printf 'ok   %s: "%s"\n' "$shell" "$line"
    fi
}

# check_contains SHELL LINE WANT...: every WANT is among the candidates (file names come with
# or without their directory, as each shell shows them).
check_contains() {
    local shell=$1 line=$2
    shift 2
    local got
    got=$("${shell}_complete" "$line")
    for want in "$@"; do
        if ! grep -q -- "$want\$" <<<"$got"; then
            printf 'FAIL %s: "%s" lacks %s; got: %s\n' "$shell" "$line" "$want" "$(echo $got)" >&2
            failures=$((failures + 1))
            return
        fi
    done
    printf 'ok   %s: "%s"\n' "$shell" "$line"
}

v6e=(v6e-1 v6e-4 v6e-8 v6e-16 v6e-32 v6e-64 v6e-128 v6e-256)
for shell in bash zsh fish; do
    check "$shell" "gcluster job sub" submit
    check "$shell" "gcluster " job cluster deploy destroy completion
    check "$shell" "gcluster job submit --compute-type v6e-" "${v6e[@]}"
    check "$shell" "gcluster job list -o " table wide json yaml
    check "$shell" "gcluster job logs pw --role w" worker
    check "$shell" "gcluster job list --st" --status
    check "$shell" "gcluster completion " bash zsh fish
    check_contains "$shell" "gcluster deploy $work/blueprints/bp-" bp-one.yaml bp-two.yaml
done
# bash replaces only the piece after "=", zsh and fish the whole word.
check bash "gcluster job list --output=j" json
check zsh "gcluster job list --output=j" --output=json
check fish "gcluster job list --output=j" --output=json

if ((failures)); then
    echo "$failures completion check(s) failed" >&2
    exit 1
fi

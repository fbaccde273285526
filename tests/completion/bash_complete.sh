#!/usr/bin/env bash
# Prints what bash's completion offers for a command line, one candidate per line:
#   tests/completion/bash_complete.sh SCRIPT 'gcluster job sub'
# SCRIPT is the output of `gcluster completion bash`. The line is completed as bash does it:
# the function `complete -p gcluster` names is called with COMP_WORDS split as readline splits
# them (at blanks, and at COMP_WORDBREAKS's = and :, which become words of their own),
# COMP_CWORD, COMP_LINE and COMP_POINT at the end of the line; COMPREPLY is printed.
set -euo pipefail
source "$1"
line=$2
spec=$(complete -p gcluster)
[[ $spec == "complete -F _gcluster gcluster" ]] || { echo "registered as: $spec" >&2; exit 1; }
COMP_WORDS=()
word=""
for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    if [[ $c == " " ]]; then
        [[ -n $word ]] && COMP_WORDS+=("$word")
        word=""
    elif [[ $c == "=" || $c == ":" ]]; then
        [[ -n $word ]] && COMP_WORDS+=("$word")
        COMP_WORDS+=("$c")
        word=""
    else
        word+=$c
    fi
done
if [[ -n $word ]]; then
    COMP_WORDS+=("$word")
elif [[ $line == *" " ]]; then
    COMP_WORDS+=("")
fi
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
COMPREPLY=()
set +eu # the function runs as in an interactive shell
_gcluster gcluster "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d'

# Prints what zsh's completion offers for a command line, one candidate per line:
#   zsh -f zsh_complete.zsh FPATH_DIR 'gcluster job sub'
# Completion needs the line editor, so an interactive zsh runs on a pseudo-terminal (zpty).
# When its editor starts, a zle-line-init widget puts the line into the buffer and completes
# it; a wrapper around compadd prints every match as "MATCH:<word>", and a marker line tells
# this script that the completion is over. Every read is bounded.
zmodload zsh/zpty || exit 2
local fpath_dir=$1 typed=$2
zpty completer zsh -f -i
zpty -w completer "PS1=''; fpath=(${(q)fpath_dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w completer 'compadd() { local -a hits; builtin compadd -O hits "$@";'\
' (( $#hits )) && print -rl -- "MAT""CH:"${^hits}; builtin compadd "$@"; }'
zpty -w completer "typed=${(q)typed}"
zpty -w completer 'complete_typed() { BUFFER=$typed; CURSOR=$#BUFFER; zle complete-word;'\
' print -r -- "<<COMPLETION""-OVER>>"; }; zle -N zle-line-init complete_typed'
local output line
integer tries
for tries in {1..600}; do
    if zpty -rt completer line; then
        output+=$line
        [[ $line == *'<<COMPLETION-OVER>>'* ]] && break
    else
        sleep 0.05
    fi
done
zpty -d completer
[[ $output == *'<<COMPLETION-OVER>>'* ]] || { print -u2 "zsh did not finish completing"; exit 1; }
print -r -- "${output//$'\r'/}" | grep -ao 'MATCH:[^[:cntrl:]]*' | sed 's/^MATCH://' | sort -u

# bash completion for tracelane                                   -*- shell-script -*-
#
# Installed as PREFIX/share/bash-completion/completions/tracelane, where bash-completion
# loads it on first use; `source` it by hand otherwise (it needs nothing of
# bash-completion). The option lists are checked against `tracelane <command> --help` by
# tests/install/install_test.sh, so that they cannot drift from the program.

_tracelane() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  # --option=value: bash splits at '=' (COMP_WORDBREAKS), so the option is two words back.
  if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then prev=${COMP_WORDS[COMP_CWORD - 2]}; fi
  local commands="compact merge sweep report restore check rules"
  local command="" i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) command=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $command ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$commands --help -h --version" -- "$cur")
    return 0
  fi

  local options
  case $command in
    compact) options="--help -h --output -o --overwrite --level --timings --rules --no-pp-flows --force --preview
                      --no-restore-data --jobs -j --single-gzip-member" ;;
    merge) options="--help -h --output -o --overwrite --level --timings --rules --force --preview --no-restore-data
                    --jobs -j --single-gzip-member" ;;
    sweep) options="--help -h --jobs -j --memory --overwrite --force --rules --dry-run -n --quiet -q
                    --report-dir --shard --plan --write-plan --level --no-restore-data --remove-originals
                    --single-gzip-member" ;;
    restore) options="--help -h --output -o --overwrite --level --rank --into --single-gzip-member" ;;
    report) options="--help -h --combine --report-dir --html --output -o --overwrite --quiet -q" ;;
    check) options="--help -h --list" ;;
    rules) options="--help -h --print-defaults --check" ;;
    *) return 0 ;;
  esac

  # The value of an option that takes one.
  case $prev in
    -o | --output | --rules | --check | --preview | --html | --plan | --write-plan)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return 0 ;;
    --report-dir | --into)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return 0 ;;
    --level)
      mapfile -t COMPREPLY < <(compgen -W "0 1 2 3 4 5 6 7 8 9 10 11 12" -- "$cur")
      return 0 ;;
    -j | --jobs | --memory | --shard | --list | --rank)
      return 0 ;;  # a number, a size, K/N: nothing to offer
  esac

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
    return 0
  fi
  # Operands: a directory for sweep, files or directories elsewhere.
  compopt -o filenames 2>/dev/null
  if [[ $command == sweep ]]; then
    mapfile -t COMPREPLY < <(compgen -d -- "$cur")
  elif [[ $command != rules ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -F _tracelane tracelane

# shellcheck shell=bash
# apt_missing.sh - the Debian packages a script needs, installed when missing: shared by
# scripts/deps.sh and scripts/kernel-deps.sh (source it; bash).

# shellcheck disable=SC2034 # read by the scripts that source this file
APT_UPDATED=0  # 1 once apt_install_missing has run apt-get update

# missing_packages PACKAGE...: those of the PACKAGEs that are not installed, one a line.
missing_packages() {
  local package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || echo "$package"
  done
}

# apt_name_missing LABEL RUN_AS_ROOT PACKAGE...: returns 0 if every PACKAGE is installed;
# else names the missing ones and the command that installs them as root (RUN_AS_ROOT, e.g.
# 'make deps') on stderr, each line starting with "LABEL: ", and returns 1. Installs nothing.
apt_name_missing() {
  local label=$1 run_as_root=$2
  local -a missing
  shift 2
  mapfile -t missing < <(missing_packages "$@")
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "$label: missing Debian packages: ${missing[*]}" >&2
  echo "$label: run '$run_as_root' as root (or: sudo apt-get install ${missing[*]})" >&2
  return 1
}

# apt_install_missing LABEL RUN_AS_ROOT PACKAGE...: installs the PACKAGEs that are missing
# (apt-get update, then apt-get install, non-interactive); returns 0 at once, offline, if none
# is. Its messages start with "LABEL: ". Not root: apt_name_missing (names them, returns 1).
apt_install_missing() {
  [ "$(id -u)" -eq 0 ] || { apt_name_missing "$@"; return; }
  local label=$1
  local -a missing
  shift 2
  mapfile -t missing < <(missing_packages "$@")
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "$label: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  APT_UPDATED=1
  # Another apt run (a second make, unattended-upgrades) holds the lock: wait for it.
  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}"
}

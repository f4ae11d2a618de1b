# Sourced by the build scripts: compile through ccache when it is installed (setup.sh installs it),
# so a second build tree (ASan, fuzz) or a repeat run on the same machine recompiles only what changed.
# base_dir + no hash_dir let two checkouts of the tree (a CI clone, a worktree) share cache entries.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  export CCACHE_NOHASHDIR=1
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-10G}"
  ccache_cmake_flags=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  ccache_cmake_flags=()
fi

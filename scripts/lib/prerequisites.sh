# Sourced by the scripts in scripts/ (not run on its own): the checks every script makes before it
# starts anything, so that a missing tool is named with the package that provides it, up front,
# instead of surfacing later as "worker did not come up".
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/prerequisites.sh"
#   help_from_header "$@"          # -h / --help: print the script's header comment, exit 0
#   require java curl python3      # exit 127 naming what to install for each one missing
#   require_java17                 # java on PATH is 17 or newer
#   require_jars_or_maven          # the jars are built, or mvn is there to build them

# The Debian 12 package (or other source) that provides a command.
prerequisite_source() {
    case "$1" in
        java|jcmd|jfr) echo "Debian: apt-get install openjdk-17-jdk-headless" ;;
        mvn) echo "Debian: apt-get install maven (3.8 or newer)" ;;
        curl) echo "Debian: apt-get install curl" ;;
        python3) echo "Debian: apt-get install python3" ;;
        redis-server) echo "Debian: apt-get install redis-server, or .ci/run --install-only" ;;
        redis-cli) echo "Debian: apt-get install redis-tools" ;;
        jq) echo "Debian: apt-get install jq" ;;
        wrk) echo "Debian: apt-get install wrk" ;;
        haproxy) echo "Debian: apt-get install haproxy" ;;
        nginx) echo "Debian: apt-get install nginx" ;;
        promtool|prometheus) echo "Debian: apt-get install prometheus, or .ci/run --install-only" ;;
        taskset) echo "Debian: apt-get install util-linux" ;;
        ss) echo "Debian: apt-get install iproute2" ;;
        bc) echo "Debian: apt-get install bc" ;;
        timeout|sha256sum) echo "Debian: apt-get install coreutils" ;;
        git) echo "Debian: apt-get install git" ;;
        nvidia-smi) echo "the NVIDIA driver's utilities, e.g. Debian: apt-get install nvidia-smi (non-free)" ;;
        vllm) echo "pip install vllm (docs/quickstart-2gpu.md)" ;;
        *) echo "a package that provides $1" ;;
    esac
}

# require CMD...: every command must be on PATH; otherwise each missing one is named with its
# package, and the script exits 127 (the shell's own status for a command not found).
require() {
    local missing=0 c
    for c in "$@"; do
        if ! command -v "$c" >/dev/null 2>&1; then
            echo "$(basename "$0"): needs $c, which is not on PATH ($(prerequisite_source "$c"))" >&2
            missing=1
        fi
    done
    if [ "$missing" -ne 0 ]; then
        exit 127
    fi
}

# require_python_module MODULE [PACKAGE]: python3 can import MODULE.
require_python_module() {
    if ! python3 -c "import $1" >/dev/null 2>&1; then
        echo "$(basename "$0"): needs the python3 module $1 (${2:-pip install $1})" >&2
        exit 127
    fi
}

# require_java17: java on PATH, version 17 or newer (the jars are built for Java 17).
require_java17() {
    require java
    local v
    v="$(java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -1)"
    if [ -n "$v" ] && [ "$v" -lt 17 ] 2>/dev/null; then
        echo "$(basename "$0"): needs Java 17 or newer, found Java $v ($(prerequisite_source java))" >&2
        exit 127
    fi
}

# require_jars_or_maven: gateway/target/sluice-gateway.jar and testbed/target/sluice-testbed.jar
# exist (relative to the repository root, the working directory), or mvn can build them.
require_jars_or_maven() {
    if [ ! -f gateway/target/sluice-gateway.jar ] || [ ! -f testbed/target/sluice-testbed.jar ]; then
        require mvn
    fi
}

# help_from_header "$@": with -h or --help as the first argument, prints the comment block at the
# top of the script (after the #! line) without its "# " and exits 0.
help_from_header() {
    case "${1:-}" in
        -h|--help)
            sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
            exit 0
            ;;
    esac
}

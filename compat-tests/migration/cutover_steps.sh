# shellcheck shell=bash
# The cut-over of docs/operations.md ("Cutting over from ZooKeeper") on one host, for a ZooKeeper
# ensemble started by scripts/ensemble.sh --zookeeper. Sourced by compat-tests/migration/cutover.sh
# and bench/migration.sh --cutover.
#
#   cut_over ZK_DIR PD_DIR BIN
#       1. SIGTERM to every ZooKeeper member at once (ensemble.sh stop), so each one's last
#          transactions are on disk;
#       2. `paddock import --dry-run` of each member's dataDir: the one with the largest zxid;
#       3. per member, ZooKeeper's own zoo.cfg with a new, empty dataDir (and its myid) in
#          PD_DIR/mK: the same client and peer addresses; `paddock import --config` of the newest
#          member's files on that member, `paddock import --join --config` on the others;
#       4. `paddock serve --config` on every member; waits until each serves, one leading.
#   Sets CUT_T0 (the SIGTERMs), CUT_T1 (ZooKeeper stopped), CUT_T2 (imported), CUT_T3 (paddock
#   serving), epoch seconds; CUT_BEST (the member imported); CUT_PIDS[K] (paddock's pids, for the
#   caller to stop); CUT_PORTS (client ports). On failure returns 1 with CUT_ERROR set.
declare -gA CUT_PIDS=()

cut_now() { date +%s.%N; }

cut_over() {
    local zk=$1 pd=$2 bin=$3 k zxid best_zxid=-1 p modes deadline
    CUT_ERROR=""
    # shellcheck source=/dev/null
    CUT_PORTS="$(source "$zk/ensemble.env" && echo "$CLIENT_PORTS")"
    CUT_T0=$(cut_now)
    bash "$ROOT/scripts/ensemble.sh" stop --dir "$zk" 2>"$pd.zk-stop.log" # SIGTERM to all at once
    CUT_T1=$(cut_now)
    CUT_BEST=0
    mkdir -p "$pd"
    for k in 1 2 3; do
        "$bin" import --zookeeper "$zk/m$k/data" --data-dir "$pd/dry-$k" --dry-run >"$pd/dry-$k.txt" 2>&1 ||
            { CUT_ERROR="import --dry-run of member $k: $(tail -2 "$pd/dry-$k.txt")"; return 1; }
        zxid=$(sed -n 's/.*the largest \(0x[0-9a-f]*\)).*/\1/p' "$pd/dry-$k.txt")
        echo "cut-over: ZooKeeper member $k: largest zxid $zxid"
        if ((zxid > best_zxid)); then CUT_BEST=$k best_zxid=$((zxid)); fi
    done
    for k in 1 2 3; do
        mkdir -p "$pd/m$k/data"
        echo "$k" >"$pd/m$k/data/myid"
        # ensemble.sh runs ZooKeeper with -Dzookeeper.admin.enableServer=false; paddock reads that
        # from zoo.cfg.
        sed "s|^dataDir=.*|dataDir=$pd/m$k/data|" "$zk/m$k/zoo.cfg" >"$pd/m$k/zoo.cfg"
        echo "admin.enableServer=false" >>"$pd/m$k/zoo.cfg"
    done
    "$bin" import --zookeeper "$zk/m$CUT_BEST/data" --config "$pd/m$CUT_BEST/zoo.cfg" >"$pd/import.txt" 2>&1 ||
        { CUT_ERROR="import of member $CUT_BEST: $(tail -3 "$pd/import.txt")"; return 1; }
    for k in 1 2 3; do
        [[ $k == "$CUT_BEST" ]] && continue
        "$bin" import --join --config "$pd/m$k/zoo.cfg" >>"$pd/import.txt" 2>&1 ||
            { CUT_ERROR="import --join of member $k: $(tail -3 "$pd/import.txt")"; return 1; }
    done
    CUT_T2=$(cut_now)
    for k in 1 2 3; do
        "$bin" serve --config "$pd/m$k/zoo.cfg" >"$pd/m$k.log" 2>&1 </dev/null &
        CUT_PIDS[$k]=$!
    done
    deadline=$((SECONDS + ${CUT_TIMEOUT:-120}))
    while true; do
        modes=""
        for p in $CUT_PORTS; do
            modes+="$(timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$p"' && printf srvr >&3 && cat <&3' 2>/dev/null |
                sed -n 's/^Mode: //p')."
        done
        [[ "$modes" =~ ^((leader|follower)\.){3}$ && "$modes" == *leader* ]] && break
        ((SECONDS < deadline)) || { CUT_ERROR="paddock did not serve (modes $modes; logs $pd/m*.log)"; return 1; }
        sleep 0.1
    done
    CUT_T3=$(cut_now)
}

cut_secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

cut_summary() { # one line: what was imported and where the time went
    echo "imported member $CUT_BEST ($(sed -n 's/^written: [^ ]* (\([0-9]* nodes, [0-9]* sessions\).*/\1/p' "$1/import.txt"));" \
        "ZooKeeper stopped in $(cut_secs "$CUT_T0" "$CUT_T1") s, dry runs and import $(cut_secs "$CUT_T1" "$CUT_T2") s," \
        "paddock serving $(cut_secs "$CUT_T2" "$CUT_T3") s after its start: $(cut_secs "$CUT_T0" "$CUT_T3") s in all"
}

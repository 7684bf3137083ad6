# Apache ZooKeeper 3.9 in an image configured like paddock's (the same docker/entrypoint.sh and
# healthcheck), so compat-tests/docker/run.sh --target zookeeper can prove the compose test itself
# against the real thing. Context: the jars `scripts/zookeeper.sh fetch` downloads (lib/) and
# docker/entrypoint.sh, docker/healthcheck.sh. BASE: a Debian 12 image with a JRE 17
# (docker/base-image.sh jre builds paddock-base-jre:bookworm).
ARG BASE=paddock-base-jre:bookworm
FROM ${BASE}
RUN set -eu; \
    groupadd --system --gid 1000 zookeeper; \
    useradd --system --gid zookeeper --uid 1000 --home-dir /data --shell /usr/sbin/nologin zookeeper; \
    mkdir -p /conf /data /datalog /logs /docker-entrypoint.d; \
    chown zookeeper:zookeeper /conf /data /datalog /logs
ENV ZOO_CONF_DIR=/conf \
    ZOO_DATA_DIR=/data \
    ZOO_DATA_LOG_DIR=/datalog \
    ZOO_TICK_TIME=2000 \
    ZOO_INIT_LIMIT=5 \
    ZOO_SYNC_LIMIT=2 \
    ZOO_AUTOPURGE_PURGEINTERVAL=0 \
    ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 \
    ZOO_MAX_CLIENT_CNXNS=60 \
    ZOO_STANDALONE_ENABLED=true \
    ZOO_ADMINSERVER_ENABLED=true \
    ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok,mntr
COPY lib/ /zookeeper/lib/
COPY entrypoint.sh /docker-entrypoint.sh
COPY healthcheck.sh /usr/local/bin/paddock-healthcheck
USER zookeeper
WORKDIR /data
VOLUME ["/data", "/datalog"]
EXPOSE 2181 2888 3888
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 CMD ["/usr/local/bin/paddock-healthcheck"]
ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["java", "-Xmx192m", "-Dzookeeper.log.dir=/logs", "-Dzookeeper.admin.enableServer=false", "-cp", "/zookeeper/lib/*", "org.apache.zookeeper.server.quorum.QuorumPeerMain", "/conf/zoo.cfg"]

module paddock/compat-tests/security/gotls

go 1.19

require github.com/go-zookeeper/zk v1.0.4

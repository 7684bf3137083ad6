module paddock/compat-tests/faults

go 1.19

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-zookeeper/zk v1.0.4
)

// Package gozk only exists to pin github.com/go-zookeeper/zk v1.0.4, whose own tests run.sh executes
// against paddock (docs/compat.md §5). It holds no code of its own.
package gozk

import _ "github.com/go-zookeeper/zk"

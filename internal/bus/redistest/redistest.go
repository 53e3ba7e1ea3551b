// Package redistest runs a real redis-server for tests: on a loopback port,
// in a directory of the test's own, with an append-only file synced on
// every write, so that a test can kill it and start it again as an
// operator's Redis would be.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process (or none, between Kill and Start).
type Server struct {
	t    testing.TB
	Dir  string // its working directory: the append-only file, the log
	Port int
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	args []string
}

// Binary returns the path of redis-server, or "" when it is not
// installed.
func Binary() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a redis-server for t, stopped at the end of the test, or
// skips t when redis-server is not installed. extra are more
// configuration directives, such as "maxmemory", "2mb".
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("redis-server is not installed (Debian's package redis-server; ./scripts/test installs it): skipping the tests of the Redis bus")
	}
	s := &Server{t: t, Dir: t.TempDir(), bin: bin, Port: freePort(t), args: extra}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// URL is the server's address for go-redis and feed-bus --redis.
func (s *Server) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(s.Port) + "/0" }

// Start starts the server (again, after Kill, on the same port and
// files) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	args := []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"), "--protected-mode", "no"}
	for i := 0; i+1 < len(s.args); i += 2 {
		args = append(args, "--"+s.args[i], s.args[i+1])
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(s.cmd, s.done)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.Port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			s.t.Fatalf("redis-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server does not answer on port %d: %v", s.Port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it
// to be gone.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Stop stops the server (at the end of the test).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
	s.cmd = nil
}

// Client is a go-redis client of the server for the test, closed at its
// end.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.Port)})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// String names the server in messages.
func (s *Server) String() string { return fmt.Sprintf("redis-server on port %d", s.Port) }

// Cluster is a Redis Cluster of three masters, for the tests that keys
// of one deployment work under Cluster.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts three redis-servers in cluster mode and joins them
// (redis-cli --cluster create), or skips t when redis-server or
// redis-cli is not installed.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil || Binary() == "" {
		t.Skip("redis-server and redis-cli are not installed (Debian's package redis-server; ./scripts/test installs it): skipping the Redis Cluster test")
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range 3 {
		s := Start(t, "cluster-enabled", "yes", "cluster-config-file", "nodes.conf", "cluster-node-timeout", "5000")
		c.Nodes = append(c.Nodes, s)
		args = append(args, "127.0.0.1:"+strconv.Itoa(s.Port))
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.Port)})
		for {
			info, _ := cl.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("the cluster is not ok: %s", info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return c
}

// URL names the cluster as feed-bus --redis takes it: one node, and the
// others as addr= parameters.
func (c *Cluster) URL() string {
	u := "redis://127.0.0.1:" + strconv.Itoa(c.Nodes[0].Port)
	for i, s := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=127.0.0.1:" + strconv.Itoa(s.Port)
	}
	return u
}

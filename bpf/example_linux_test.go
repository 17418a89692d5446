//go:build linux

package bpf_test

import (
	"log"
	"net/netip"
	"os/exec"
	"syscall"

	"github.com/moat-sandbox/moat/bpf"
	"github.com/moat-sandbox/moat/bpf/cgroup"
)

// A run in shared-network mode: the sandbox may reach only the proxy on
// the host's loopback, and every other attempt is reported.
func Example() {
	if err := bpf.Supported(); err != nil {
		log.Fatal(err) // not root, or an old kernel: use another tier
	}
	cgroups, err := cgroup.New("") // <cgroup2 mount>/moat
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cgroups.CleanStale(); err != nil { // runs whose moat died
		log.Print(err)
	}
	group, err := cgroups.Create("")
	if err != nil {
		log.Fatal(err)
	}
	defer group.Remove() // kills what is left, then removes the cgroup and its filter

	proxy := netip.MustParseAddrPort("127.0.0.1:3128")
	filter, err := bpf.Attach(group.Path(), []netip.AddrPort{proxy}, bpf.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close() // stops reporting; the cgroup stays filtered
	go func() {
		for ev := range filter.Events() {
			log.Printf("deny network-%s %v (pid %d %s)", ev.Op, ev.Addr, ev.Pid, ev.Comm)
		}
	}()

	cmd := exec.Command("curl", "-sS", "https://example.com")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: group.FD()}
	if err := cmd.Run(); err != nil {
		log.Print(err)
	}
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reset makes the container as a fresh one is for its next episode: no
// process of the last one left (every process but the agent and its
// ancestors killed), its writable places emptied (the workspace, /tmp,
// /dev/shm) with their modes put back, and the System V IPC objects of the
// container's IPC namespace removed. Everything else an episode could write
// is read-only (the root file system, the toolchain, the module cache, the
// shared build cache, the task templates). It waits for a running command
// to end (the provider cancels it first). The response counts the
// entries it removed; an error means the container must not be used again.
func (a *agent) reset(req *request) *response {
	a.execMu.Lock()
	defer a.execMu.Unlock()
	resp := &response{ID: req.ID}
	self := os.Getpid()
	keep := map[int]bool{self: true, 1: true, os.Getppid(): true}
	for i := 0; sweep(keep) > 0; i++ {
		if i == 1000 {
			resp.Err, resp.ErrKind = "processes of the last episode keep coming back", "reset"
			return resp
		}
	}
	for _, dir := range []string{a.dir, "/tmp", "/dev/shm"} {
		n, err := empty(dir)
		if err != nil {
			resp.Err, resp.ErrKind = err.Error(), "reset"
			return resp
		}
		resp.Files += n
	}
	// The workspace is the sandbox user's: an episode may have changed
	// its mode. /tmp and /dev/shm are root's.
	if err := os.Chmod(a.dir, a.dirMode); err != nil {
		resp.Err, resp.ErrKind = err.Error(), "reset"
		return resp
	}
	if err := removeSysVIPC(); err != nil {
		resp.Err, resp.ErrKind = err.Error(), "reset"
	}
	return resp
}

// empty removes everything in dir (not dir itself), also where an episode
// made parts of it unwritable, and says how many entries it held. A dir
// that does not exist is empty.
func empty(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		if err := removeAll(filepath.Join(dir, e.Name())); err != nil {
			return 0, fmt.Errorf("empty %s: %w", dir, err)
		}
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) > 0 {
		return 0, fmt.Errorf("empty %s: %d entries left (%v)", dir, len(left), err)
	}
	return len(ents), nil
}

// removeSysVIPC removes every System V shared memory segment, message
// queue and semaphore set of the container's IPC namespace, as listed in
// /proc/sysvipc. The agent runs as the user every command runs as, so it
// owns them all.
func removeSysVIPC() error {
	for _, k := range []struct {
		file string
		ctl  uintptr
	}{{"shm", syscall.SYS_SHMCTL}, {"msg", syscall.SYS_MSGCTL}, {"sem", syscall.SYS_SEMCTL}} {
		f, err := os.Open("/proc/sysvipc/" + k.file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			id, err := strconv.Atoi(fields[1])
			if err != nil {
				continue
			}
			const ipcRMID = 0
			var errno syscall.Errno
			if k.ctl == syscall.SYS_SEMCTL {
				_, _, errno = syscall.Syscall6(k.ctl, uintptr(id), 0, ipcRMID, 0, 0, 0)
			} else {
				_, _, errno = syscall.Syscall(k.ctl, uintptr(id), ipcRMID, 0)
			}
			if errno != 0 && errno != syscall.EINVAL && errno != syscall.EIDRM {
				f.Close()
				return fmt.Errorf("remove System V %s %d: %w", k.file, id, errno)
			}
		}
		f.Close()
	}
	return nil
}

package env

import (
	"slices"
	"testing"
)

// A workspace lists the files that differ from the task's start: a file
// written back to its start is not changed, a file created is, and after
// a revert none is. Its hash follows what differs, not the writes.
func TestWorkspaceTracksWhatDiffers(t *testing.T) {
	w := NewWorkspace(&Task{ID: "t"})
	if w.Hash() != "" || len(w.Changed()) != 0 || len(w.Files()) != 0 {
		t.Fatal("a fresh workspace has changes")
	}
	w.record("a.go", []byte("A"), []byte("A2"))
	w.record("new.go", nil, []byte(""))
	h := w.Hash()
	if got := w.Files(); !slices.Equal(got, []string{"a.go", "new.go"}) || h == "" {
		t.Fatalf("files %v, hash %q; want a.go and new.go, a hash", got, h)
	}
	if data, ok := w.current("a.go"); !ok || string(data) != "A2" {
		t.Errorf("current a.go = %q, %v", data, ok)
	}
	w.record("a.go", []byte("A2"), []byte("A")) // back to its start
	if got := w.Files(); !slices.Equal(got, []string{"new.go"}) || w.Hash() == h {
		t.Fatalf("after writing a.go back: files %v (hash unchanged: %v); want new.go alone", got, w.Hash() == h)
	}
	if _, ok := w.Changed()["a.go"]; ok {
		t.Error("Changed lists a.go, which is as it started")
	}
	if orig, ok := w.original("a.go"); !ok || string(orig) != "A" {
		t.Errorf("original a.go = %q, %v; want A", orig, ok)
	}
	w.record("a.go", []byte("A"), []byte("A2"))
	if w.Hash() != h {
		t.Error("the same changes hash differently")
	}
	w.reverted()
	if w.Hash() != "" || len(w.Changed()) != 0 || len(w.Files()) != 0 {
		t.Errorf("after a revert: files %v, hash %q", w.Files(), w.Hash())
	}
	if _, ok := w.current("a.go"); ok {
		t.Error("after a revert a.go is still current in the workspace")
	}
}

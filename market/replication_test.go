package market

import "testing"

// TestCopyingUntilReplicated: a new job's first copies go out in the Ready
// of its Submit; Copying says so from then until their Replicated, which
// is what a node waits on before it tells the submitter the job was
// accepted.
func TestCopyingUntilReplicated(t *testing.T) {
	c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(4))
	m := c.nodes[0]
	if err := m.Submit(c.now, "j", job("f", task("t", 1000))); err != nil {
		t.Fatal(err)
	}
	if m.Copying("j") {
		t.Fatal("Copying before the Ready that sends the copies")
	}
	var batch *Replicate
	for _, e := range m.Ready() {
		if r, ok := e.(Replicate); ok {
			batch = &r
		}
	}
	if batch == nil || len(batch.Records) != 1 || batch.Records[0].Record.ID != "j" || len(batch.Records[0].Peers) != 2 {
		t.Fatalf("Submit's Ready: %+v, want one Replicate of j to both peers", batch)
	}
	if !m.Copying("j") || m.Copying("other") {
		t.Fatal("Copying wrong while the first copies are out")
	}
	m.Replicated(c.now, batch.Batch, map[string]int{"j": 2})
	if m.Copying("j") {
		t.Fatal("Copying after Replicated")
	}
}

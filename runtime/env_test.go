package runtime

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestBuildEnvPrecedence(t *testing.T) {
	base := []string{
		"PATH=/bin",
		"HOME=/root",
		"CUDA_VISIBLE_DEVICES=7",
		"AGORA_CHECKPOINT_DIR=/stale",
		"SHARED=node",
		"PWD=/node",
		"=ignored",
		"malformed",
	}
	spec := Spec{
		JobID:    "job",
		Task:     "task",
		Replica:  2,
		Attempt:  3,
		Epoch:    42,
		GPUs:     []int{0, 1},
		Env:      map[string]string{"SHARED": "job", "AGORA_JOB_ID": "forged", "USER_VAR": "u"},
		ExtraEnv: map[string]string{"AGORA_RANK": "5", "USER_VAR": "extra"},
	}
	env := buildEnv(base, spec, "/work/dir")
	want := map[string]string{
		"PATH":                 "/bin",
		"HOME":                 "/root",
		"SHARED":               "job",
		"USER_VAR":             "extra",
		"AGORA_RANK":           "5",
		"PWD":                  "/work/dir",
		"AGORA_JOB_ID":         "job",
		"AGORA_TASK":           "task",
		"AGORA_REPLICA":        "2",
		"AGORA_ATTEMPT":        "3",
		"AGORA_EPOCH":          "42",
		"CUDA_VISIBLE_DEVICES": "0,1",
	}
	for k, v := range want {
		if got, ok := lookupEnv(env, k); !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if v, ok := lookupEnv(env, EnvCheckpointDir); ok {
		t.Errorf("stale %s=%q leaked", EnvCheckpointDir, v)
	}
	if len(env) != len(want) {
		t.Errorf("env has %d entries, want %d: %q", len(env), len(want), env)
	}
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("duplicate key %s in %q", k, env)
		}
		seen[k] = true
	}
}

func TestBuildEnvNoGPUAndCheckpoint(t *testing.T) {
	env := buildEnv([]string{"CUDA_VISIBLE_DEVICES=3"}, Spec{CheckpointDir: "/ckpt"}, "/w")
	if v, ok := lookupEnv(env, EnvCUDAVisibleDevices); !ok || v != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES = %q (set %v), want set and empty", v, ok)
	}
	if v, _ := lookupEnv(env, EnvCheckpointDir); v != "/ckpt" {
		t.Errorf("AGORA_CHECKPOINT_DIR = %q, want /ckpt", v)
	}
}

func TestLookPathUsesTaskPath(t *testing.T) {
	p, err := lookPath("sh", []string{"PATH=relative:/nonexistent:/bin:/usr/bin"})
	if err != nil || (p != "/bin/sh" && p != "/usr/bin/sh") {
		t.Fatalf("lookPath(sh) = %q, %v", p, err)
	}
	if _, err := lookPath("sh", []string{"PATH=/nonexistent"}); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("lookPath with bad PATH: err = %v, want ErrNotFound", err)
	}
	if p, err := lookPath("./run.sh", nil); p != "./run.sh" || err != nil {
		t.Fatalf("lookPath(./run.sh) = %q, %v", p, err)
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Command: []string{"true"}, WorkDir: "/tmp"}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	bad := []Spec{
		{WorkDir: "/tmp"},
		{Command: []string{"true"}},
		{Command: []string{"true"}, WorkDir: "/tmp", GPUs: []int{-1}},
		{Command: []string{"true"}, WorkDir: "/tmp", Env: map[string]string{"A=B": "x"}},
		{Command: []string{"true"}, WorkDir: "/tmp", ExtraEnv: map[string]string{"": "x"}},
		{Command: []string{"true"}, WorkDir: "/tmp", Memory: -1},
	}
	for i, s := range bad {
		if err := s.validate(); err == nil {
			t.Errorf("bad spec %d accepted", i)
		}
	}
	if g := (Spec{}).grace(); g != DefaultGrace {
		t.Errorf("default grace = %s", g)
	}
}

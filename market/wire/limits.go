package wire

import (
	"math"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// Version is the wire version this package writes and the only one it
// reads.
const Version = 1

// Size limits of whole encoded messages, checked before anything else is
// decoded. A stream reader passes the matching limit to ReadFrame.
const (
	// MaxMessageBytes is the largest encoded market Envelope: an award's
	// command and environment and its job's ticket fit.
	MaxMessageBytes = 512 << 10
	// MaxCredentialBytes is the largest signed request a Query carries.
	MaxCredentialBytes = auth.MaxTokenBytes
	// MaxQueryBytes is the largest encoded Query.
	MaxQueryBytes = 4<<10 + MaxCredentialBytes
	// MaxReplyBodyBytes is the largest QueryReply body: a status reply
	// carries a whole job record (see node's job-record frame limit).
	MaxReplyBodyBytes = 16 << 20
	// MaxQueryReplyBytes is the largest encoded QueryReply: a body of
	// MaxReplyBodyBytes plus room for the other fields.
	MaxQueryReplyBytes = MaxReplyBodyBytes + 16<<10
)

// Field limits. Where the job spec has a matching rule the limit is the
// spec's (package spec), so that every valid job can travel; the rest
// bound identifiers and free text that only the wire carries. Lengths
// named "Len" count characters (runes) unless they say bytes.
const (
	// MaxPrevious is the most earlier placements a TaskSpec lists.
	MaxPrevious = 64
	// MaxProofBytes is the longest executor's signature in a task proof
	// (an Ed25519 signature is 64 bytes; RSA keys make longer ones).
	MaxProofBytes = 1024
	// MaxJobIDLen is the longest job ID, in bytes.
	MaxJobIDLen = 128
	// MaxNodeIDLen is the longest node ID (libp2p peer ID text), in bytes.
	MaxNodeIDLen = 128
	// MaxReasonLen is the longest reason text in a NoBid, AwardReply,
	// TaskStatus, CancelTask or HoldReply, in bytes.
	MaxReasonLen = 4096
	// MaxErrorLen is the longest QueryReply error text, in bytes.
	MaxErrorLen = 4096

	// MaxTaskNameLen is the longest task name, in bytes.
	MaxTaskNameLen = spec.MaxTaskNameLen
	// MaxTypeLen is the longest job type.
	MaxTypeLen = spec.MaxTypeLen
	// MinPriority is the lowest job priority.
	MinPriority = spec.MinPriority
	// MaxPriority is the highest job priority.
	MaxPriority = spec.MaxPriority
	// MaxReplica is the highest replica index.
	MaxReplica = spec.MaxReplicas - 1
	// MaxGangSize is the largest gang: every replica of a task.
	MaxGangSize = spec.MaxReplicas
	// MaxRank is the highest rank of a gang replica.
	MaxRank = MaxGangSize - 1
	// MaxPeers is the most node IDs in a gang's peer list, one a replica.
	MaxPeers = MaxGangSize
	// MaxSlots is the most replicas of a gang one bid may offer to start.
	MaxSlots = MaxGangSize
	// MaxStealTasks is the most tasks one StealRequest may ask for.
	MaxStealTasks = 1024
	// MaxCounter bounds auction rounds and attempt numbers (they travel
	// as int32).
	MaxCounter = math.MaxInt32

	// MaxCPUMilli is the most CPU a request may ask for, in millicores.
	MaxCPUMilli = spec.MaxCPUMilli
	// MaxBytes bounds memory, disk and per-GPU memory requests.
	MaxBytes = spec.MaxBytes
	// MaxGPUCount is the most whole GPUs a request may ask for.
	MaxGPUCount = spec.MaxGPUCount
	// MaxGPUShareMilli is the largest GPU share, in thousandths of a GPU.
	MaxGPUShareMilli = resource.WholeGPU
	// MaxModelLen is the longest GPU or device model.
	MaxModelLen = spec.MaxModelLen
	// MaxDevices is the most device requests in one request.
	MaxDevices = spec.MaxDevices
	// MaxDeviceKindLen is the longest device kind, in bytes.
	MaxDeviceKindLen = spec.MaxDeviceKindLen
	// MaxDeviceCount is the most units of one device request.
	MaxDeviceCount = spec.MaxDeviceCount
	// MaxLabels is the most label constraints in one request.
	MaxLabels = spec.MaxLabels
	// MaxLabelKeyLen is the longest label key, in bytes.
	MaxLabelKeyLen = spec.MaxLabelKeyLen
	// MaxLabelValueLen is the longest label value.
	MaxLabelValueLen = spec.MaxLabelValueLen
	// MaxSiteLen is the longest site name.
	MaxSiteLen = spec.MaxSiteLen

	// MaxCommandArgs is the most arguments, program included, in a command.
	MaxCommandArgs = spec.MaxCommandArgs
	// MaxCommandBytes bounds the summed length of a command's arguments.
	MaxCommandBytes = spec.MaxCommandBytes
	// MaxEnvEntries is the most environment variables in a task.
	MaxEnvEntries = spec.MaxEnvEntries
	// MaxEnvNameLen is the longest environment variable name, in bytes.
	MaxEnvNameLen = spec.MaxEnvNameLen
	// MaxEnvBytes bounds the summed length of a task's variable names and
	// values (each pair counted as len(name)+len(value)+2).
	MaxEnvBytes = spec.MaxEnvBytes

	// MaxDuration bounds estimates, timeouts and checkpoint intervals.
	MaxDuration time.Duration = spec.MaxDuration
)

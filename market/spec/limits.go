package spec

import "time"

// Limits on a spec and on the Job it becomes. Parse and Validate reject
// anything beyond them, so that a hostile or mistaken spec cannot make a
// peer spend unbounded memory or time.
const (
	// MaxSpecBytes is the largest spec Parse reads; it is checked first.
	MaxSpecBytes = 1 << 20
	// MaxJobBytes bounds the text a whole job holds (names, commands,
	// environment, dependencies, labels, models), counted with YAML
	// aliases expanded, so that a small spec cannot become a huge job.
	MaxJobBytes = 4 << 20
	// MaxErrors is how many problems a *ValidationError lists at most.
	MaxErrors = 20

	// MaxJobNameLen is the longest job name, in characters.
	MaxJobNameLen = 128
	// MaxTypeLen is the longest job type, in characters.
	MaxTypeLen = 128
	// MaxTasks is the most tasks a job may have.
	MaxTasks = 1000
	// MaxTaskNameLen is the longest task name, in bytes of [A-Za-z0-9_.-].
	MaxTaskNameLen = 64

	// MinPriority and MaxPriority bound a job's priority.
	MinPriority = 0
	MaxPriority = 10

	// MaxCommandArgs is the most arguments, program included, in a command.
	MaxCommandArgs = 1024
	// MaxCommandBytes bounds the summed length of a command's arguments.
	MaxCommandBytes = 128 << 10

	// MaxEnvEntries is the most environment variables a task may set.
	MaxEnvEntries = 256
	// MaxEnvNameLen is the longest environment variable name.
	MaxEnvNameLen = 256
	// MaxEnvBytes bounds the summed length of a task's names and values.
	MaxEnvBytes = 64 << 10

	// MaxCPUMilli is the most CPU a task may ask for, in millicores.
	MaxCPUMilli = 65536 * 1000
	// MaxBytes bounds every size a task may ask for: memory, disk and
	// per-GPU memory (1 PiB).
	MaxBytes = 1 << 50
	// MaxGPUCount is the most whole GPUs a task may ask for.
	MaxGPUCount = 64
	// MaxGPUShareMilli is the largest share of one GPU, in thousandths;
	// a whole GPU is asked for with a count instead.
	MaxGPUShareMilli = 999
	// MaxModelLen is the longest GPU or device model name.
	MaxModelLen = 128
	// MaxDevices is the most device requests (kinds) a task may make.
	MaxDevices = 16
	// MaxDeviceKindLen is the longest device kind name.
	MaxDeviceKindLen = 64
	// MaxDeviceCount is the most units of one device kind a task may ask for.
	MaxDeviceCount = 64
	// MaxImageRefLen bounds an image reference.
	MaxImageRefLen = 512
	// MaxImageSize bounds an image task's image_size: 1 TiB.
	MaxImageSize = 1 << 40
	// MaxLabels is the most label constraints a task may have.
	MaxLabels = 64
	// MaxLabelKeyLen is the longest label key.
	MaxLabelKeyLen = 128
	// MaxLabelValueLen is the longest label value, in characters.
	MaxLabelValueLen = 256
	// MaxSiteLen is the longest site name, in characters.
	MaxSiteLen = 128

	// MaxDuration bounds estimates, timeouts, checkpoint intervals and how
	// far in the future a deadline may lie.
	MaxDuration = 366 * 24 * time.Hour
	// MinCheckpointInterval is the shortest checkpoint interval.
	MinCheckpointInterval = time.Second

	// MaxRetries is the most retries a task may ask for.
	MaxRetries = 20
	// MaxReplicas is the most replicas a task may ask for.
	MaxReplicas = 1000
	// MaxJobReplicas is the most task replicas a job may hold, over all
	// its tasks (Slurm's default MaxArraySize is 1,001). The job's record
	// holds every replica's state and attempts; this keeps it within what
	// a manager stores and replicates (about 4 MB with every retry used).
	MaxJobReplicas = 1000
)

// Defaults Parse applies to fields a spec leaves out. A Job built in code
// gets no defaults: its builder sets these values and Validate checks them.
const (
	// DefaultPriority is a job's priority when the spec gives none.
	DefaultPriority = 5
	// DefaultRetries is a task's retry count when the spec gives none.
	DefaultRetries = 3
	// DefaultReplicas is a task's replica count when the spec gives none.
	DefaultReplicas = 1
	// DefaultCPUMilli is a task's CPU request, in millicores, when the spec
	// gives none: one core.
	DefaultCPUMilli = 1000
)

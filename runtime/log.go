package runtime

import logging "github.com/ipfs/go-log/v2"

var log = logging.Logger("runtime")

package sip_test

import (
	"os"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestMain(m *testing.M) { os.Exit(apptest.Main(m)) }

package hubiam

import (
	"strings"
	"testing"
)

func TestCheckPartition(t *testing.T) {
	for _, tt := range []struct {
		region, partition string
		want              string // "" = accepted
	}{
		{"eu-west-1", "aws", ""},
		{"us-gov-west-1", "aws-us-gov", ""},
		{"us-gov-east-1", "", ""},
		{"cn-north-1", "", "partition aws-cn; supported: aws, aws-us-gov"},
		{"cn-northwest-1", "aws-cn", "aws-cn"},
		{"us-iso-east-1", "", "aws-iso"},
		{"eu-west-1", "aws-us-gov", "does not match"},
	} {
		err := CheckPartition(tt.region, tt.partition)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckPartition(%s, %s) = %v, want %q", tt.region, tt.partition, err, tt.want)
		}
	}
}

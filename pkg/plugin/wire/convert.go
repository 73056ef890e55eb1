package wire

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
)

// IDsToProto converts resource identifiers to their wire form.
func IDsToProto(ids []api.ResourceIdentifier) []*pb.ResourceIdentifier {
	if len(ids) == 0 {
		return nil
	}
	out := make([]*pb.ResourceIdentifier, len(ids))
	for i, id := range ids {
		out[i] = &pb.ResourceIdentifier{Group: id.Group, Resource: id.Resource, Namespace: id.Namespace, Name: id.Name}
	}
	return out
}

// IDsFromProto converts resource identifiers from their wire form.
func IDsFromProto(ids []*pb.ResourceIdentifier) []api.ResourceIdentifier {
	if len(ids) == 0 {
		return nil
	}
	out := make([]api.ResourceIdentifier, len(ids))
	for i, id := range ids {
		out[i] = api.ResourceIdentifier{
			GroupResource: schema.GroupResource{Group: id.GetGroup(), Resource: id.GetResource()},
			Namespace:     id.GetNamespace(),
			Name:          id.GetName(),
		}
	}
	return out
}

// SelectorToProto converts a resource selector to its wire form.
func SelectorToProto(s api.ResourceSelector) *pb.ResourceSelector {
	return &pb.ResourceSelector{
		IncludedNamespaces: s.IncludedNamespaces,
		ExcludedNamespaces: s.ExcludedNamespaces,
		IncludedResources:  s.IncludedResources,
		ExcludedResources:  s.ExcludedResources,
		Selector:           s.LabelSelector,
	}
}

// SelectorFromProto converts a resource selector from its wire form.
func SelectorFromProto(s *pb.ResourceSelector) api.ResourceSelector {
	return api.ResourceSelector{
		IncludedNamespaces: s.GetIncludedNamespaces(),
		ExcludedNamespaces: s.GetExcludedNamespaces(),
		IncludedResources:  s.GetIncludedResources(),
		ExcludedResources:  s.GetExcludedResources(),
		LabelSelector:      s.GetSelector(),
	}
}

func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func timeFromProto(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

// ProgressToProto converts operation progress to its wire form.
func ProgressToProto(p api.OperationProgress) *pb.OperationProgress {
	return &pb.OperationProgress{
		Completed:      p.Completed,
		Err:            p.Err,
		NCompleted:     p.NCompleted,
		NTotal:         p.NTotal,
		OperationUnits: p.OperationUnits,
		Description:    p.Description,
		Started:        timeToProto(p.Started),
		Updated:        timeToProto(p.Updated),
	}
}

// ProgressFromProto converts operation progress from its wire form.
func ProgressFromProto(p *pb.OperationProgress) api.OperationProgress {
	return api.OperationProgress{
		Completed:      p.GetCompleted(),
		Err:            p.GetErr(),
		NCompleted:     p.GetNCompleted(),
		NTotal:         p.GetNTotal(),
		OperationUnits: p.GetOperationUnits(),
		Description:    p.GetDescription(),
		Started:        timeFromProto(p.GetStarted()),
		Updated:        timeFromProto(p.GetUpdated()),
	}
}

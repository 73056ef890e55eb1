package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// restoreExecute is Execute of either RestoreItemAction version (the same
// four request fields in both): decode, call, encode the item returned.
func restoreExecute(ctx context.Context, r *registry[restoreCalls], plugin string, item, restore, fromBackup []byte) (*RestoreItemActionExecuteOutput, []byte, error) {
	impl, rs, err := call[Restore](r, plugin, restore, "restore")
	if err != nil {
		return nil, nil, err
	}
	it, err := decodeItem(item, "item")
	if err != nil {
		return nil, nil, err
	}
	fb, err := decodeItem(fromBackup, "itemFromBackup")
	if err != nil {
		return nil, nil, err
	}
	out, err := impl.execute(ctx, &RestoreItemActionExecuteInput{Item: asUnstructured(it), ItemFromBackup: asUnstructured(fb), Restore: rs})
	if err != nil {
		return nil, nil, err
	}
	if out == nil {
		out = &RestoreItemActionExecuteOutput{}
	}
	b, err := encodeItem(out.UpdatedItem, item)
	return out, b, err
}

type riaV1Server struct{ r *registry[restoreCalls] }

func registerRIAv1(r *registry[restoreCalls], g *grpc.Server) {
	pb.RegisterRestoreItemActionServer(g, riaV1Server{r})
}

func (s riaV1Server) AppliesTo(_ context.Context, req *pb.RestoreItemActionAppliesToRequest) (*pb.RestoreItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &pb.RestoreItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s riaV1Server) Execute(ctx context.Context, req *pb.RestoreItemActionExecuteRequest) (*pb.RestoreItemActionExecuteResponse, error) {
	out, item, err := restoreExecute(ctx, s.r, req.GetPlugin(), req.GetItem(), req.GetRestore(), req.GetItemFromBackup())
	if err != nil {
		return nil, err
	}
	return &pb.RestoreItemActionExecuteResponse{Item: item, AdditionalItems: wire.IDsToProto(out.AdditionalItems), SkipRestore: out.SkipRestore}, nil
}

type riaV2Server struct{ r *registry[restoreCalls] }

func registerRIAv2(r *registry[restoreCalls], g *grpc.Server) {
	riav2.RegisterRestoreItemActionServer(g, riaV2Server{r})
}

func (s riaV2Server) AppliesTo(_ context.Context, req *riav2.RestoreItemActionAppliesToRequest) (*riav2.RestoreItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &riav2.RestoreItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s riaV2Server) Execute(ctx context.Context, req *riav2.RestoreItemActionExecuteRequest) (*riav2.RestoreItemActionExecuteResponse, error) {
	out, item, err := restoreExecute(ctx, s.r, req.GetPlugin(), req.GetItem(), req.GetRestore(), req.GetItemFromBackup())
	if err != nil {
		return nil, err
	}
	resp := &riav2.RestoreItemActionExecuteResponse{
		Item:                   item,
		AdditionalItems:        wire.IDsToProto(out.AdditionalItems),
		SkipRestore:            out.SkipRestore,
		OperationID:            out.OperationID,
		WaitForAdditionalItems: out.WaitForAdditionalItems,
	}
	if out.AdditionalItemsReadyTimeout > 0 {
		resp.AdditionalItemsReadyTimeout = durationpb.New(out.AdditionalItemsReadyTimeout)
	}
	return resp, nil
}

func (s riaV2Server) Progress(ctx context.Context, req *riav2.RestoreItemActionProgressRequest) (*riav2.RestoreItemActionProgressResponse, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	p, err := impl.progress(ctx, req.GetOperationID(), restore)
	return &riav2.RestoreItemActionProgressResponse{Progress: wire.ProgressToProto(p)}, err
}

func (s riaV2Server) Cancel(ctx context.Context, req *riav2.RestoreItemActionCancelRequest) (*emptypb.Empty, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, impl.cancel(ctx, req.GetOperationID(), restore)
}

func (s riaV2Server) AreAdditionalItemsReady(ctx context.Context, req *riav2.RestoreItemActionItemsReadyRequest) (*riav2.RestoreItemActionItemsReadyResponse, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	ready, err := impl.ready(ctx, wire.IDsFromProto(req.GetAdditionalItems()), restore)
	return &riav2.RestoreItemActionItemsReadyResponse{Ready: ready}, err
}

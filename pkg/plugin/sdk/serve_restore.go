package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type riaServer struct{ r *registry[restoreCalls] }

func registerRIAv1(r *registry[restoreCalls], g *grpc.Server) {
	serveAs(g, &riav2.RestoreItemAction_ServiceDesc, kind.RestoreItemAction, riaServer{r})
}

func registerRIAv2(r *registry[restoreCalls], g *grpc.Server) {
	riav2.RegisterRestoreItemActionServer(g, riaServer{r})
}

func (s riaServer) AppliesTo(_ context.Context, req *riav2.RestoreItemActionAppliesToRequest) (*riav2.RestoreItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &riav2.RestoreItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s riaServer) Execute(ctx context.Context, req *riav2.RestoreItemActionExecuteRequest) (*riav2.RestoreItemActionExecuteResponse, error) {
	impl, rs, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	it, err := decodeItem(req.GetItem(), "item")
	if err != nil {
		return nil, err
	}
	fb, err := decodeItem(req.GetItemFromBackup(), "itemFromBackup")
	if err != nil {
		return nil, err
	}
	out, err := impl.execute(ctx, &RestoreItemActionExecuteInput{Item: asUnstructured(it), ItemFromBackup: asUnstructured(fb), Restore: rs})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = &RestoreItemActionExecuteOutput{}
	}
	item, err := encodeItem(out.UpdatedItem, req.GetItem())
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

func (s riaServer) Progress(ctx context.Context, req *riav2.RestoreItemActionProgressRequest) (*riav2.RestoreItemActionProgressResponse, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	p, err := impl.progress(ctx, req.GetOperationID(), restore)
	return &riav2.RestoreItemActionProgressResponse{Progress: wire.ProgressToProto(p)}, err
}

func (s riaServer) Cancel(ctx context.Context, req *riav2.RestoreItemActionCancelRequest) (*emptypb.Empty, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, impl.cancel(ctx, req.GetOperationID(), restore)
}

func (s riaServer) AreAdditionalItemsReady(ctx context.Context, req *riav2.RestoreItemActionItemsReadyRequest) (*riav2.RestoreItemActionItemsReadyResponse, error) {
	impl, restore, err := call[Restore](s.r, req.GetPlugin(), req.GetRestore(), "restore")
	if err != nil {
		return nil, err
	}
	ready, err := impl.ready(ctx, wire.IDsFromProto(req.GetAdditionalItems()), restore)
	return &riav2.RestoreItemActionItemsReadyResponse{Ready: ready}, err
}

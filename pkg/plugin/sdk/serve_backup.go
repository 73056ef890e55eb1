package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type biaServer struct{ r *registry[backupCalls] }

func registerBIAv1(r *registry[backupCalls], g *grpc.Server) {
	serveAs(g, &biav2.BackupItemAction_ServiceDesc, kind.BackupItemAction, biaServer{r})
}

func registerBIAv2(r *registry[backupCalls], g *grpc.Server) {
	biav2.RegisterBackupItemActionServer(g, biaServer{r})
}

func (s biaServer) AppliesTo(_ context.Context, req *biav2.BackupItemActionAppliesToRequest) (*biav2.BackupItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &biav2.BackupItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s biaServer) Execute(ctx context.Context, req *biav2.ExecuteRequest) (*biav2.ExecuteResponse, error) {
	impl, b, it, err := itemCall(s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	if err != nil {
		return nil, err
	}
	updated, additional, operationID, post, err := impl.execute(ctx, asUnstructured(it), b)
	if err != nil {
		return nil, err
	}
	item, err := encodeItem(updated, req.GetItem())
	return &biav2.ExecuteResponse{Item: item, AdditionalItems: wire.IDsToProto(additional), OperationID: operationID,
		PostOperationItems: wire.IDsToProto(post)}, err
}

func (s biaServer) Progress(ctx context.Context, req *biav2.BackupItemActionProgressRequest) (*biav2.BackupItemActionProgressResponse, error) {
	impl, backup, err := call[Backup](s.r, req.GetPlugin(), req.GetBackup(), "backup")
	if err != nil {
		return nil, err
	}
	p, err := impl.progress(ctx, req.GetOperationID(), backup)
	return &biav2.BackupItemActionProgressResponse{Progress: wire.ProgressToProto(p)}, err
}

func (s biaServer) Cancel(ctx context.Context, req *biav2.BackupItemActionCancelRequest) (*emptypb.Empty, error) {
	impl, backup, err := call[Backup](s.r, req.GetPlugin(), req.GetBackup(), "backup")
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, impl.cancel(ctx, req.GetOperationID(), backup)
}

type diaServer struct{ r *registry[deleteCalls] }

func registerDIA(r *registry[deleteCalls], g *grpc.Server) {
	pb.RegisterDeleteItemActionServer(g, diaServer{r})
}

func (s diaServer) AppliesTo(_ context.Context, req *pb.DeleteItemActionAppliesToRequest) (*pb.DeleteItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &pb.DeleteItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s diaServer) Execute(ctx context.Context, req *pb.DeleteItemActionExecuteRequest) (*pb.Empty, error) {
	impl, backup, item, err := itemCall(s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, impl.execute(ctx, &DeleteItemActionExecuteInput{Item: asUnstructured(item), Backup: backup})
}

package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// backupExecute is Execute of either BackupItemAction version: decode, call,
// encode the item the action returned.
func backupExecute(ctx context.Context, r *registry[backupCalls], plugin string, backup, item []byte) (out []byte, additional []*pb.ResourceIdentifier, operationID string, post []*pb.ResourceIdentifier, err error) {
	impl, b, it, err := itemCall(r, plugin, backup, item)
	if err != nil {
		return nil, nil, "", nil, err
	}
	updated, add, operationID, postItems, err := impl.execute(ctx, asUnstructured(it), b)
	if err == nil {
		out, err = encodeItem(updated, item)
	}
	return out, wire.IDsToProto(add), operationID, wire.IDsToProto(postItems), err
}

type biaV1Server struct{ r *registry[backupCalls] }

func registerBIAv1(r *registry[backupCalls], g *grpc.Server) {
	pb.RegisterBackupItemActionServer(g, biaV1Server{r})
}

func (s biaV1Server) AppliesTo(_ context.Context, req *pb.BackupItemActionAppliesToRequest) (*pb.BackupItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &pb.BackupItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s biaV1Server) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	item, additional, _, _, err := backupExecute(ctx, s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	return &pb.ExecuteResponse{Item: item, AdditionalItems: additional}, err
}

type biaV2Server struct{ r *registry[backupCalls] }

func registerBIAv2(r *registry[backupCalls], g *grpc.Server) {
	biav2.RegisterBackupItemActionServer(g, biaV2Server{r})
}

func (s biaV2Server) AppliesTo(_ context.Context, req *biav2.BackupItemActionAppliesToRequest) (*biav2.BackupItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &biav2.BackupItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s biaV2Server) Execute(ctx context.Context, req *biav2.ExecuteRequest) (*biav2.ExecuteResponse, error) {
	item, additional, operationID, post, err := backupExecute(ctx, s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	return &biav2.ExecuteResponse{Item: item, AdditionalItems: additional, OperationID: operationID, PostOperationItems: post}, err
}

func (s biaV2Server) Progress(ctx context.Context, req *biav2.BackupItemActionProgressRequest) (*biav2.BackupItemActionProgressResponse, error) {
	impl, backup, err := call[Backup](s.r, req.GetPlugin(), req.GetBackup(), "backup")
	if err != nil {
		return nil, err
	}
	p, err := impl.progress(ctx, req.GetOperationID(), backup)
	return &biav2.BackupItemActionProgressResponse{Progress: wire.ProgressToProto(p)}, err
}

func (s biaV2Server) Cancel(ctx context.Context, req *biav2.BackupItemActionCancelRequest) (*emptypb.Empty, error) {
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

package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/runtime"

	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type biaV1Server struct{ r *registry[BackupItemAction] }

func registerBIAv1(r *registry[BackupItemAction], g *grpc.Server) {
	pb.RegisterBackupItemActionServer(g, biaV1Server{r})
}

func (s biaV1Server) AppliesTo(_ context.Context, req *pb.BackupItemActionAppliesToRequest) (*pb.BackupItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &pb.BackupItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s biaV1Server) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	impl, backup, item, err := itemCall(s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	if err != nil {
		return nil, err
	}
	var (
		updated    runtime.Unstructured
		additional []ResourceIdentifier
	)
	if c, ok := impl.(interface {
		ExecuteWithContext(context.Context, runtime.Unstructured, *Backup) (runtime.Unstructured, []ResourceIdentifier, error)
	}); ok {
		updated, additional, err = c.ExecuteWithContext(ctx, asUnstructured(item), backup)
	} else {
		updated, additional, err = impl.Execute(asUnstructured(item), backup)
	}
	if err != nil {
		return nil, err
	}
	out, err := encodeItem(updated, req.GetItem())
	if err != nil {
		return nil, err
	}
	return &pb.ExecuteResponse{Item: out, AdditionalItems: wire.IDsToProto(additional)}, nil
}

type biaV2Server struct{ r *registry[BackupItemActionV2] }

func registerBIAv2(r *registry[BackupItemActionV2], g *grpc.Server) {
	biav2.RegisterBackupItemActionServer(g, biaV2Server{r})
}

func (s biaV2Server) AppliesTo(_ context.Context, req *biav2.BackupItemActionAppliesToRequest) (*biav2.BackupItemActionAppliesToResponse, error) {
	sel, err := selector(s.r, req.GetPlugin())
	return &biav2.BackupItemActionAppliesToResponse{ResourceSelector: sel}, err
}

func (s biaV2Server) Execute(ctx context.Context, req *biav2.ExecuteRequest) (*biav2.ExecuteResponse, error) {
	impl, backup, item, err := itemCall(s.r, req.GetPlugin(), req.GetBackup(), req.GetItem())
	if err != nil {
		return nil, err
	}
	var (
		updated          runtime.Unstructured
		additional, post []ResourceIdentifier
		operationID      string
	)
	if c, ok := impl.(interface {
		ExecuteWithContext(context.Context, runtime.Unstructured, *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error)
	}); ok {
		updated, additional, operationID, post, err = c.ExecuteWithContext(ctx, asUnstructured(item), backup)
	} else {
		updated, additional, operationID, post, err = impl.Execute(asUnstructured(item), backup)
	}
	if err != nil {
		return nil, err
	}
	out, err := encodeItem(updated, req.GetItem())
	if err != nil {
		return nil, err
	}
	return &biav2.ExecuteResponse{
		Item:               out,
		AdditionalItems:    wire.IDsToProto(additional),
		OperationID:        operationID,
		PostOperationItems: wire.IDsToProto(post),
	}, nil
}

func (s biaV2Server) Progress(ctx context.Context, req *biav2.BackupItemActionProgressRequest) (*biav2.BackupItemActionProgressResponse, error) {
	impl, backup, err := call[Backup](s.r, req.GetPlugin(), req.GetBackup(), "backup")
	if err != nil {
		return nil, err
	}
	var p OperationProgress
	if c, ok := impl.(interface {
		ProgressWithContext(context.Context, string, *Backup) (OperationProgress, error)
	}); ok {
		p, err = c.ProgressWithContext(ctx, req.GetOperationID(), backup)
	} else {
		p, err = impl.Progress(req.GetOperationID(), backup)
	}
	if err != nil {
		return nil, err
	}
	return &biav2.BackupItemActionProgressResponse{Progress: wire.ProgressToProto(p)}, nil
}

func (s biaV2Server) Cancel(ctx context.Context, req *biav2.BackupItemActionCancelRequest) (*emptypb.Empty, error) {
	impl, backup, err := call[Backup](s.r, req.GetPlugin(), req.GetBackup(), "backup")
	if err != nil {
		return nil, err
	}
	if c, ok := impl.(interface {
		CancelWithContext(context.Context, string, *Backup) error
	}); ok {
		err = c.CancelWithContext(ctx, req.GetOperationID(), backup)
	} else {
		err = impl.Cancel(req.GetOperationID(), backup)
	}
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

type diaServer struct{ r *registry[DeleteItemAction] }

func registerDIA(r *registry[DeleteItemAction], g *grpc.Server) {
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
	in := &DeleteItemActionExecuteInput{Item: asUnstructured(item), Backup: backup}
	if c, ok := impl.(interface {
		ExecuteWithContext(context.Context, *DeleteItemActionExecuteInput) error
	}); ok {
		err = c.ExecuteWithContext(ctx, in)
	} else {
		err = impl.Execute(in)
	}
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

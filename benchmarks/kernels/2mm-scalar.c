/* 2mm as people write it: D = alpha*A*B*C + beta*D with scalar accumulators (issue 16's fp64 target) */
void mm2_scalar(int ni, int nj, int nk, int nl, double alpha, double beta,
                double tmp[ni][nj], double A[ni][nk], double B[nk][nj],
                double C[nj][nl], double D[ni][nl]) {
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      double acc = 0.0;
      for (int k = 0; k < nk; k++)
        acc += A[i][k] * B[k][j];
      tmp[i][j] = alpha * acc;
    }
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nl; j++) {
      double acc = 0.0;
      for (int k = 0; k < nj; k++)
        acc += tmp[i][k] * C[k][j];
      D[i][j] = acc + beta * D[i][j];
    }
}

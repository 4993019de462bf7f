/* gemm: C = alpha*A*B + beta*C (PolyBench 4.2) */
void kernel_gemm(int ni, int nj, int nk, float alpha, float beta,
                 float C[ni][nj], float A[ni][nk], float B[nk][nj])
{
  for (int i = 0; i < ni; i++) {
    for (int j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (int k = 0; k < nk; k++)
      for (int j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
}

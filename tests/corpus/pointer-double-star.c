// expect: 3:23 pointer
// options: --size N=8
void f(int N, double **A, double B[N]) {
  B[0] = A[0][0];
}

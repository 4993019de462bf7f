/* gramschmidt.c: PolyBench/C 4.2 linear-algebra/solvers/gramschmidt, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(M) && !defined(N)
# ifdef MINI_DATASET
#  define M 20
#  define N 30
# endif
# ifdef SMALL_DATASET
#  define M 60
#  define N 80
# endif
# ifdef MEDIUM_DATASET
#  define M 200
#  define N 240
# endif
#endif

#define _PB_M POLYBENCH_LOOP_BOUND(M,m)
#define _PB_N POLYBENCH_LOOP_BOUND(N,n)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_gramschmidt(int m, int n,
                        DATA_TYPE POLYBENCH_2D(A,M,N,m,n),
                        DATA_TYPE POLYBENCH_2D(R,N,N,n,n),
                        DATA_TYPE POLYBENCH_2D(Q,M,N,m,n))
{
  int i, j, k;

  DATA_TYPE nrm;

#pragma scop
  for (k = 0; k < _PB_N; k++)
    {
      nrm = SCALAR_VAL(0.0);
      for (i = 0; i < _PB_M; i++)
        nrm += A[i][k] * A[i][k];
      R[k][k] = SQRT_FUN(nrm);
      for (i = 0; i < _PB_M; i++)
        Q[i][k] = A[i][k] / R[k][k];
      for (j = k + 1; j < _PB_N; j++)
        {
          R[k][j] = SCALAR_VAL(0.0);
          for (i = 0; i < _PB_M; i++)
            R[k][j] += Q[i][k] * A[i][j];
          for (i = 0; i < _PB_M; i++)
            A[i][j] = A[i][j] - Q[i][k] * R[k][j];
        }
    }
#pragma endscop

}
